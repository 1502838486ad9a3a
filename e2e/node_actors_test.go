//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// nodeActor is an actor whose runtime runs the handlers of the tier's
// runtime image (e2e/testdata/node) with the sidecar the service injects.
func nodeActor(ns, name, transport, handler string) obj {
	return obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": obj{"name": name, "namespace": ns},
		"spec": obj{"transport": transport,
			"timeout": obj{"processing": 30, "gracefulShutdown": 20},
			"workload": obj{"replicas": 1, "template": obj{"spec": obj{
				"containers": []any{obj{"name": "asya-runtime", "image": nodeImage("runtime"),
					"env": []any{obj{"name": "ASYA_HANDLER", "value": handler}}}}}}}}}
}

func runtimeContainer(a obj) obj {
	return field(a, "spec", "workload", "template", "spec", "containers").([]any)[0].(obj)
}

// nodeNamespace makes a namespace for one test, with the labels given and
// the Secrets the transports' sidecars and KEDA read.
func nodeNamespace(t *testing.T, ctx context.Context, name string, labels obj) string {
	t.Helper()
	ensureNamespace(t, ctx, name, true)
	if labels == nil {
		return name
	}
	// Applied by the same field manager, so after ensureNamespace's.
	if _, err := env.cluster.client.apply(ctx, obj{"apiVersion": "v1", "kind": "Namespace",
		"metadata": obj{"name": name, "labels": labels}}, "e2e"); err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
	return name
}

// runActor creates the actor and keeps syncing it in the background, as
// Metacontroller's watches and resyncs would, until the test ends; then
// deletes it and waits until it and its pods are gone.
func runActor(t *testing.T, ctx context.Context, d *driver, a obj) {
	t.Helper()
	ns, name := str(a, "metadata", "namespace"), str(a, "metadata", "name")
	if _, err := env.cluster.client.create(ctx, a, false); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	loop, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for loop.Err() == nil {
			p, err := d.reconcile(loop, ns, name)
			if err != nil && loop.Err() == nil {
				t.Logf("sync %s/%s: %v", ns, name, err)
			}
			if p != nil && p.Gone {
				return
			}
			select {
			case <-loop.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	t.Cleanup(func() {
		defer func() { stop(); <-done }()
		if err := env.cluster.client.delete(ctx, d.parent, ns, name); err != nil && !isStatus(err, 404) {
			t.Errorf("delete %s: %v", name, err)
			return
		}
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			_, err := env.cluster.client.get(ctx, d.parent, ns, name)
			pods, _ := env.cluster.client.list(ctx, podsGVR, ns, "asya.sh/asya="+name)
			if isStatus(err, 404) && len(pods) == 0 {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Errorf("actor %s/%s or its pods still there 90 s after delete\n%s", ns, name, podReport(ctx, ns, "asya.sh/asya="+name))
	})
}

// runReadyActor runs the actor (runActor) and waits until its pod is Ready.
func runReadyActor(t *testing.T, ctx context.Context, d *driver, a obj) []obj {
	t.Helper()
	runActor(t, ctx, d, a)
	ns, name := str(a, "metadata", "namespace"), str(a, "metadata", "name")
	pods, err := waitPodsReady(ctx, ns, "asya.sh/asya="+name, 1, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// actorStatus is the actor's status as last written.
func actorStatus(t *testing.T, ctx context.Context, d *driver, ns, name string) obj {
	t.Helper()
	a, err := env.cluster.client.get(ctx, d.parent, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return mapAt(a, "status")
}

// awaitStatus waits until the actor's status.status is want and check, if
// any, passes on the status; on timeout it shows the status and the pods.
func awaitStatus(t *testing.T, ctx context.Context, d *driver, ns, name, want string, within time.Duration, check func(obj) error) time.Duration {
	t.Helper()
	return awaitActor(t, ctx, d, ns, name, within, "status "+want, func(s obj) error {
		if got := str(s, "status"); got != want {
			return fmt.Errorf("status %s", got)
		}
		if check != nil {
			return check(s)
		}
		return nil
	})
}

// awaitActor waits until check passes on the actor's status; on timeout it
// shows the status and the pods.
func awaitActor(t *testing.T, ctx context.Context, d *driver, ns, name string, within time.Duration, what string, check func(obj) error) time.Duration {
	t.Helper()
	start := time.Now()
	var last obj
	for time.Since(start) < within {
		if last = actorStatus(t, ctx, d, ns, name); check(last) == nil {
			return time.Since(start)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("actor %s/%s: not %s after %s: %s\n%s", ns, name, what, within, mustJSON(last), podReport(ctx, ns, "asya.sh/asya="+name))
	return 0
}

// condition is the message of the actor's condition of that type, with
// its reason.
func condition(s obj, typ string) (reason, message string) {
	conds, _ := s["conditions"].([]any)
	for _, c := range conds {
		if str(c.(obj), "type") == typ {
			return str(c.(obj), "reason"), str(c.(obj), "message")
		}
	}
	return "", ""
}

// TestNodeActorProcessesMessages: an actor's pod runs on the node with the
// runtime loaded from what asya-sync delivers; a message in gives its
// result on happy-end, and a raising handler's message goes to error-end.
func TestNodeActorProcessesMessages(t *testing.T) {
	d := nodeDriver(t)
	for _, b := range nodeBrokers {
		t.Run(b.transport, func(t *testing.T) {
			ctx := context.Background()
			ns := nodeNamespace(t, ctx, "node-e2e-"+b.transport, nil)
			name := b.name("echo")
			happy, errs := newCollector(t, ctx, b, "happy-end"), newCollector(t, ctx, b, "error-end")
			start := time.Now()
			pods := runReadyActor(t, ctx, d, nodeActor(ns, name, b.transport, "handlers.process"))
			env.timed("node: "+b.transport+" actor create → pod Ready", start)
			awaitStatus(t, ctx, d, ns, name, "Running", 30*time.Second, nil)

			ok, bad := message(name, obj{"n": 1}), message(name, obj{"fail": true})
			start = time.Now()
			b.send(t, ctx, name, ok)
			got := happy.await(t, ctx, 30*time.Second, ok.ID)
			env.timed("node: "+b.transport+" message round trip", start)
			result, _ := got[ok.ID][0].Payload.(map[string]any)
			if result["pod"] != str(pods[0], "metadata", "name") || fmt.Sprint(result["echo"]) != "map[n:1]" {
				t.Errorf("happy-end got %s, want the echo of {n: 1} from pod %s", mustJSON(got[ok.ID][0]), str(pods[0], "metadata", "name"))
			}
			b.send(t, ctx, name, bad)
			failed := errs.await(t, ctx, 30*time.Second, bad.ID)
			if !strings.Contains(mustJSON(failed[bad.ID][0]), "handler refused") {
				t.Errorf("error-end got %s, want the handler's error", mustJSON(failed[bad.ID][0]))
			}
		})
	}
}

// TestNodeStatefulSetActor: an actor whose workload is a StatefulSet runs
// and processes messages like a Deployment's.
func TestNodeStatefulSetActor(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	ns := nodeNamespace(t, ctx, "node-e2e-statefulset", nil)
	b := nodeBrokers[0]
	happy := newCollector(t, ctx, b, "happy-end")
	a := nodeActor(ns, "stateful", b.transport, "handlers.process")
	mapAt(a, "spec", "workload")["kind"] = "StatefulSet"
	pods := runReadyActor(t, ctx, d, a)
	awaitStatus(t, ctx, d, ns, "stateful", "Running", 30*time.Second, nil)
	m := message("stateful", obj{"n": 1})
	b.send(t, ctx, "stateful", m)
	got := happy.await(t, ctx, 30*time.Second, m.ID)[m.ID][0]
	if by := got.Payload.(map[string]any)["pod"]; by != "stateful-0" || str(pods[0], "metadata", "name") != "stateful-0" {
		t.Errorf("answered by %v, want the StatefulSet's pod stateful-0", by)
	}
}

// TestNodePodHealth: what a real kubelet reports about broken pods shows in
// the actor's status as the spec names it.
func TestNodePodHealth(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	ns := nodeNamespace(t, ctx, "node-e2e-health", nil)
	cases := []struct {
		name, status, reason, message string
		mutate                        func(c obj)
	}{
		{"crashloop", "RuntimeError", "CrashLoopBackOff", "container asya-runtime keeps crashing: exit code 1 (Error): RuntimeError: broken handler module", func(c obj) {
			c["env"] = []any{obj{"name": "ASYA_HANDLER", "value": "broken.process"}}
		}},
		{"no-image", "ImagePullError", "", "e2e.local/no-such-image:e2e", func(c obj) {
			c["image"] = "e2e.local/no-such-image:e2e"
		}},
		{"too-big", "PendingResources", "", "Insufficient cpu", func(c obj) {
			c["resources"] = obj{"requests": obj{"cpu": "64"}}
		}},
		{"oomkilled", "RuntimeError", "CrashLoopBackOff", "container asya-runtime keeps crashing: exit code 137 (OOMKilled)", func(c obj) {
			c["env"] = []any{obj{"name": "ASYA_HANDLER", "value": "greedy.process"}}
			c["resources"] = obj{"limits": obj{"memory": "64Mi"}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := nodeActor(ns, c.name, "rabbitmq", "handlers.process")
			c.mutate(runtimeContainer(a))
			runActor(t, ctx, d, a)
			took := awaitStatus(t, ctx, d, ns, c.name, c.status, 2*time.Minute, func(s obj) error {
				reason, msg := condition(s, "WorkloadReady")
				if (c.reason != "" && reason != c.reason) || !strings.Contains(msg, c.message) {
					return fmt.Errorf("WorkloadReady %s: %s", reason, msg)
				}
				return nil
			})
			reason, msg := condition(actorStatus(t, ctx, d, ns, c.name), "WorkloadReady")
			t.Logf("%s after %.1fs: %s: %s", c.status, took.Seconds(), reason, msg)
		})
	}
}
