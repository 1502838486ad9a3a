//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestHealthyActorWritesStatusThreeTimes counts status writes the way
// Metacontroller makes them: it syncs the actor on every change of a child
// or related object and writes the status whenever the answer differs from
// the stored one. Nothing in the test cluster runs pods, so the test plays
// the Deployment controller and the kubelet, one report at a time, as they
// report a new actor's pod coming up healthy. docs/design.md#scale: Creating, Updating,
// Running, and nothing more.
func TestHealthyActorWritesStatusThreeTimes(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	ns, name := "e2e-writes", "settle"
	ensureNamespace(t, ctx, ns, true)
	a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	mapAt(a, "metadata")["name"] = name
	mapAt(a, "spec")["transport"] = "rabbitmq"
	mapAt(a, "spec", "workload")["replicas"] = 1
	// Created: Metacontroller syncs, writes Creating, creates the children
	// and syncs again on their creation (the Deployment has no status yet).
	passes := createActor(t, ctx, a)

	k := env.cluster.client
	dep, err := k.byKind(ctx, "apps/v1", "Deployment")
	if err != nil {
		t.Fatal(err)
	}
	podGVR, err := k.byKind(ctx, "v1", "Pod")
	if err != nil {
		t.Fatal(err)
	}
	d, err := k.get(ctx, dep, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	gen := field(d, "metadata", "generation")
	now := time.Now().UTC().Format(time.RFC3339)
	deploymentStatus := func(replicas, ready int) obj {
		return obj{"observedGeneration": gen, "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": ready, "availableReplicas": ready, "unavailableReplicas": 1 - ready}
	}
	podName := name + "-7d9f8c6b5-q2w3e"
	steps := []struct {
		name   string
		report func() error
	}{
		{"Deployment controller: new ReplicaSet, no pods yet", func() error {
			return putStatus(ctx, dep.path(ns, name), obj{"observedGeneration": gen, "unavailableReplicas": 1})
		}},
		{"ReplicaSet controller: pod created", func() error {
			labels := mapAt(d, "spec", "template", "metadata", "labels")
			_, err := k.create(ctx, obj{"apiVersion": "v1", "kind": "Pod",
				"metadata": obj{"name": podName, "namespace": ns, "labels": labels},
				"spec":     mapAt(d, "spec", "template", "spec")}, false)
			return err
		}},
		{"scheduler: pod bound, sandbox starting", func() error {
			return putStatus(ctx, podGVR.path(ns, podName), podStatus(d, now, "Pending", false))
		}},
		{"Deployment controller: one replica, not ready", func() error {
			return putStatus(ctx, dep.path(ns, name), deploymentStatus(1, 0))
		}},
		{"kubelet: containers running, not ready", func() error {
			return putStatus(ctx, podGVR.path(ns, podName), podStatus(d, now, "Running", false))
		}},
		{"kubelet: pod ready", func() error {
			return putStatus(ctx, podGVR.path(ns, podName), podStatus(d, now, "Running", true))
		}},
		{"Deployment controller: one replica ready", func() error {
			return putStatus(ctx, dep.path(ns, name), deploymentStatus(1, 1))
		}},
	}
	for _, s := range steps {
		if err := s.report(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		p, err := env.driver.reconcile(ctx, ns, name)
		if err != nil {
			t.Fatalf("sync after %s: %v", s.name, err)
		}
		if p.StatusWritten {
			t.Logf("status write after %s: %s", s.name, str(p.Response.Status, "status"))
		}
		passes = append(passes, p)
	}
	passes = append(passes, converge(t, ctx, ns, name)...)
	writes := 0
	for _, p := range passes {
		if p.StatusWritten {
			writes++
		}
	}
	st := mapAt(getActor(t, ctx, ns, name), "status")
	if writes > 3 || str(st, "status") != "Running" {
		t.Errorf("%d status writes, ending %q; want at most 3 (Creating, Updating, Running) ending Running", writes, str(st, "status"))
	}
}

// putStatus replaces an object's status through its status subresource.
func putStatus(ctx context.Context, path string, status obj) error {
	cur, err := env.cluster.client.do(ctx, "GET", path, nil, "")
	if err != nil {
		return err
	}
	cur["status"] = status
	_, err = env.cluster.client.do(ctx, "PUT", path+"/status", cur, "")
	return err
}

// podStatus is what the scheduler and the kubelet report of a pod of d:
// Pending with its containers being created, Running not ready, or ready.
func podStatus(d obj, since, phase string, ready bool) obj {
	readyStatus, started := "False", phase == "Running"
	if ready {
		readyStatus = "True"
	}
	var containers []any
	for _, c := range mapAt(d, "spec", "template", "spec")["containers"].([]any) {
		state := obj{"waiting": obj{"reason": "ContainerCreating"}}
		if started {
			state = obj{"running": obj{"startedAt": since}}
		}
		containers = append(containers, obj{"name": str(c.(obj), "name"), "image": str(c.(obj), "image"), "imageID": "",
			"ready": ready, "started": started, "restartCount": 0, "state": state})
	}
	return obj{
		"phase": phase,
		"conditions": []any{
			obj{"type": "PodScheduled", "status": "True", "lastTransitionTime": since},
			obj{"type": "Initialized", "status": "True", "lastTransitionTime": since},
			obj{"type": "ContainersReady", "status": readyStatus, "lastTransitionTime": since},
			obj{"type": "Ready", "status": readyStatus, "lastTransitionTime": since},
		},
		"containerStatuses": containers,
		"startTime":         since,
	}
}
