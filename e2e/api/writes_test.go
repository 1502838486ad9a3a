//go:build e2e

package api

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestHealthyActorWritesStatusThreeTimes counts status writes the way
// Metacontroller makes them: it syncs the actor on every change of a child
// or related object and writes the status whenever the answer differs from
// the stored one. Nothing in the test cluster runs pods, so the test plays
// the Deployment controller and the kubelet, one report at a time, as they
// report a new actor's pod coming up healthy. docs/design.md#scale: Creating, Updating,
// Running, and nothing more.
func TestHealthyActorWritesStatusThreeTimes(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	ns, name := "e2e-writes", "settle"
	testenv.EnsureNamespace(t, ctx, ns, true)
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	testenv.MapAt(a, "metadata")["name"] = name
	testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
	testenv.MapAt(a, "spec", "workload")["replicas"] = 1
	// Created: Metacontroller syncs, writes Creating, creates the children
	// and syncs again on their creation (the Deployment has no status yet).
	passes := createActor(t, ctx, a)

	k := env.Cluster.Client
	dep, err := k.ByKind(ctx, "apps/v1", "Deployment")
	if err != nil {
		t.Fatal(err)
	}
	podGVR, err := k.ByKind(ctx, "v1", "Pod")
	if err != nil {
		t.Fatal(err)
	}
	d, err := k.Get(ctx, dep, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	gen := testenv.Field(d, "metadata", "generation")
	now := time.Now().UTC().Format(time.RFC3339)
	deploymentStatus := func(replicas, ready int) testenv.Obj {
		return testenv.Obj{"observedGeneration": gen, "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": ready, "availableReplicas": ready, "unavailableReplicas": 1 - ready}
	}
	podName := name + "-7d9f8c6b5-q2w3e"
	steps := []struct {
		name   string
		report func() error
	}{
		{"Deployment controller: new ReplicaSet, no pods yet", func() error {
			return putStatus(ctx, dep.Path(ns, name), testenv.Obj{"observedGeneration": gen, "unavailableReplicas": 1})
		}},
		{"ReplicaSet controller: pod created", func() error {
			labels := testenv.MapAt(d, "spec", "template", "metadata", "labels")
			_, err := k.Create(ctx, testenv.Obj{"apiVersion": "v1", "kind": "Pod",
				"metadata": testenv.Obj{"name": podName, "namespace": ns, "labels": labels},
				"spec":     testenv.MapAt(d, "spec", "template", "spec")}, false)
			return err
		}},
		{"scheduler: pod bound, sandbox starting", func() error {
			return putStatus(ctx, podGVR.Path(ns, podName), podStatus(d, now, "Pending", false))
		}},
		{"Deployment controller: one replica, not ready", func() error {
			return putStatus(ctx, dep.Path(ns, name), deploymentStatus(1, 0))
		}},
		{"kubelet: containers running, not ready", func() error {
			return putStatus(ctx, podGVR.Path(ns, podName), podStatus(d, now, "Running", false))
		}},
		{"kubelet: pod ready", func() error {
			return putStatus(ctx, podGVR.Path(ns, podName), podStatus(d, now, "Running", true))
		}},
		{"Deployment controller: one replica ready", func() error {
			return putStatus(ctx, dep.Path(ns, name), deploymentStatus(1, 1))
		}},
	}
	for _, s := range steps {
		if err := s.report(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		p, err := env.Driver.Reconcile(ctx, ns, name)
		if err != nil {
			t.Fatalf("sync after %s: %v", s.name, err)
		}
		if p.StatusWritten {
			t.Logf("status write after %s: %s", s.name, testenv.Str(p.Response.Status, "status"))
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
	st := testenv.MapAt(testenv.GetActor(t, ctx, ns, name), "status")
	if writes > 3 || testenv.Str(st, "status") != "Running" {
		t.Errorf("%d status writes, ending %q; want at most 3 (Creating, Updating, Running) ending Running", writes, testenv.Str(st, "status"))
	}
}

// putStatus replaces an object's status through its status subresource.
func putStatus(ctx context.Context, path string, status testenv.Obj) error {
	cur, err := env.Cluster.Client.Do(ctx, "GET", path, nil, "")
	if err != nil {
		return err
	}
	cur["status"] = status
	_, err = env.Cluster.Client.Do(ctx, "PUT", path+"/status", cur, "")
	return err
}

// podStatus is what the scheduler and the kubelet report of a pod of d:
// Pending with its containers being created, Running not ready, or ready.
func podStatus(d testenv.Obj, since, phase string, ready bool) testenv.Obj {
	readyStatus, started := "False", phase == "Running"
	if ready {
		readyStatus = "True"
	}
	var containers []any
	for _, c := range testenv.MapAt(d, "spec", "template", "spec")["containers"].([]any) {
		state := testenv.Obj{"waiting": testenv.Obj{"reason": "ContainerCreating"}}
		if started {
			state = testenv.Obj{"running": testenv.Obj{"startedAt": since}}
		}
		containers = append(containers, testenv.Obj{"name": testenv.Str(c.(testenv.Obj), "name"), "image": testenv.Str(c.(testenv.Obj), "image"), "imageID": "",
			"ready": ready, "started": started, "restartCount": 0, "state": state})
	}
	return testenv.Obj{
		"phase": phase,
		"conditions": []any{
			testenv.Obj{"type": "PodScheduled", "status": "True", "lastTransitionTime": since},
			testenv.Obj{"type": "Initialized", "status": "True", "lastTransitionTime": since},
			testenv.Obj{"type": "ContainersReady", "status": readyStatus, "lastTransitionTime": since},
			testenv.Obj{"type": "Ready", "status": readyStatus, "lastTransitionTime": since},
		},
		"containerStatuses": containers,
		"startTime":         since,
	}
}
