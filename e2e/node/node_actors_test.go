//go:build e2e

package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// nodeActor is an actor whose runtime runs the handlers of the tier's
// runtime image (e2e/testdata/node) with the sidecar the service injects.
func nodeActor(ns, name, transport, handler string) testenv.Obj {
	return testenv.Obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": testenv.Obj{"name": name, "namespace": ns},
		"spec": testenv.Obj{"transport": transport,
			"timeout": testenv.Obj{"processing": 30, "gracefulShutdown": 20},
			"workload": testenv.Obj{"replicas": 1, "template": testenv.Obj{"spec": testenv.Obj{
				"containers": []any{testenv.Obj{"name": "asya-runtime", "image": testenv.NodeImage("runtime"),
					"env": []any{testenv.Obj{"name": "ASYA_HANDLER", "value": handler}}}}}}}}}
}

func runtimeContainer(a testenv.Obj) testenv.Obj {
	return testenv.Field(a, "spec", "workload", "template", "spec", "containers").([]any)[0].(testenv.Obj)
}

// nodeNamespace makes a namespace for one test, with the labels given and
// the Secrets the transports' sidecars and KEDA read.
func nodeNamespace(t *testing.T, ctx context.Context, name string, labels testenv.Obj) string {
	t.Helper()
	testenv.EnsureNamespace(t, ctx, name, true)
	if labels == nil {
		return name
	}
	// Applied by the same field manager, so after EnsureNamespace's.
	if _, err := env.Cluster.Client.Apply(ctx, testenv.Obj{"apiVersion": "v1", "kind": "Namespace",
		"metadata": testenv.Obj{"name": name, "labels": labels}}, "e2e"); err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
	return name
}

// runActor creates the actor and keeps syncing it in the background, as
// Metacontroller's watches and resyncs would, until the test ends; then
// deletes it and waits until it and its pods are gone.
func runActor(t *testing.T, ctx context.Context, d *testenv.Driver, a testenv.Obj) {
	t.Helper()
	ns, name := testenv.Str(a, "metadata", "namespace"), testenv.Str(a, "metadata", "name")
	if _, err := env.Cluster.Client.Create(ctx, a, false); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	loop, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for loop.Err() == nil {
			p, err := d.Reconcile(loop, ns, name)
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
		if err := env.Cluster.Client.Delete(ctx, d.Parent, ns, name); err != nil && !testenv.IsStatus(err, 404) {
			t.Errorf("delete %s: %v", name, err)
			return
		}
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			_, err := env.Cluster.Client.Get(ctx, d.Parent, ns, name)
			pods, _ := env.Cluster.Client.List(ctx, podsGVR, ns, "asya.sh/asya="+name)
			if testenv.IsStatus(err, 404) && len(pods) == 0 {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Errorf("actor %s/%s or its pods still there 90 s after delete\n%s", ns, name, podReport(ctx, ns, "asya.sh/asya="+name))
	})
}

// runReadyActor runs the actor (runActor) and waits until its pod is Ready.
func runReadyActor(t *testing.T, ctx context.Context, d *testenv.Driver, a testenv.Obj) []testenv.Obj {
	t.Helper()
	runActor(t, ctx, d, a)
	ns, name := testenv.Str(a, "metadata", "namespace"), testenv.Str(a, "metadata", "name")
	pods, err := waitPodsReady(ctx, ns, "asya.sh/asya="+name, 1, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// actorStatus is the actor's status as last written.
func actorStatus(t *testing.T, ctx context.Context, d *testenv.Driver, ns, name string) testenv.Obj {
	t.Helper()
	a, err := env.Cluster.Client.Get(ctx, d.Parent, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return testenv.MapAt(a, "status")
}

// awaitStatus waits until the actor's status.status is want and check, if
// any, passes on the status; on timeout it shows the status and the pods.
func awaitStatus(t *testing.T, ctx context.Context, d *testenv.Driver, ns, name, want string, within time.Duration, check func(testenv.Obj) error) time.Duration {
	t.Helper()
	return awaitActor(t, ctx, d, ns, name, within, "status "+want, func(s testenv.Obj) error {
		if got := testenv.Str(s, "status"); got != want {
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
func awaitActor(t *testing.T, ctx context.Context, d *testenv.Driver, ns, name string, within time.Duration, what string, check func(testenv.Obj) error) time.Duration {
	t.Helper()
	start := time.Now()
	var last testenv.Obj
	for time.Since(start) < within {
		if last = actorStatus(t, ctx, d, ns, name); check(last) == nil {
			return time.Since(start)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("actor %s/%s: not %s after %s: %s\n%s", ns, name, what, within, testenv.MustJSON(last), podReport(ctx, ns, "asya.sh/asya="+name))
	return 0
}

// condition is the message of the actor's condition of that type, with
// its reason.
func condition(s testenv.Obj, typ string) (reason, message string) {
	conds, _ := s["conditions"].([]any)
	for _, c := range conds {
		if testenv.Str(c.(testenv.Obj), "type") == typ {
			return testenv.Str(c.(testenv.Obj), "reason"), testenv.Str(c.(testenv.Obj), "message")
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
		t.Run(b.Transport, func(t *testing.T) {
			ctx := context.Background()
			ns := nodeNamespace(t, ctx, "node-e2e-"+b.Transport, nil)
			name := b.Name("echo")
			happy, errs := newCollector(t, ctx, b, "happy-end"), newCollector(t, ctx, b, "error-end")
			start := time.Now()
			pods := runReadyActor(t, ctx, d, nodeActor(ns, name, b.Transport, "handlers.process"))
			env.Timed("node: "+b.Transport+" actor create → pod Ready", start)
			awaitStatus(t, ctx, d, ns, name, "Running", 30*time.Second, nil)

			ok, bad := message(name, testenv.Obj{"n": 1}), message(name, testenv.Obj{"fail": true})
			start = time.Now()
			b.Send(t, ctx, name, ok)
			got := happy.await(t, ctx, 30*time.Second, ok.ID)
			env.Timed("node: "+b.Transport+" message round trip", start)
			result, _ := got[ok.ID][0].Payload.(map[string]any)
			if result["pod"] != testenv.Str(pods[0], "metadata", "name") || fmt.Sprint(result["echo"]) != "map[n:1]" {
				t.Errorf("happy-end got %s, want the echo of {n: 1} from pod %s", testenv.MustJSON(got[ok.ID][0]), testenv.Str(pods[0], "metadata", "name"))
			}
			b.Send(t, ctx, name, bad)
			failed := errs.await(t, ctx, 30*time.Second, bad.ID)
			if !strings.Contains(testenv.MustJSON(failed[bad.ID][0]), "handler refused") {
				t.Errorf("error-end got %s, want the handler's error", testenv.MustJSON(failed[bad.ID][0]))
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
	a := nodeActor(ns, "stateful", b.Transport, "handlers.process")
	testenv.MapAt(a, "spec", "workload")["kind"] = "StatefulSet"
	pods := runReadyActor(t, ctx, d, a)
	awaitStatus(t, ctx, d, ns, "stateful", "Running", 30*time.Second, nil)
	m := message("stateful", testenv.Obj{"n": 1})
	b.Send(t, ctx, "stateful", m)
	got := happy.await(t, ctx, 30*time.Second, m.ID)[m.ID][0]
	if by := got.Payload.(map[string]any)["pod"]; by != "stateful-0" || testenv.Str(pods[0], "metadata", "name") != "stateful-0" {
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
		mutate                        func(c testenv.Obj)
	}{
		{"crashloop", "RuntimeError", "CrashLoopBackOff", "container asya-runtime keeps crashing: exit code 1 (Error): RuntimeError: broken handler module", func(c testenv.Obj) {
			c["env"] = []any{testenv.Obj{"name": "ASYA_HANDLER", "value": "broken.process"}}
		}},
		{"no-image", "ImagePullError", "", "e2e.local/no-such-image:e2e", func(c testenv.Obj) {
			c["image"] = "e2e.local/no-such-image:e2e"
		}},
		{"too-big", "PendingResources", "", "Insufficient cpu", func(c testenv.Obj) {
			c["resources"] = testenv.Obj{"requests": testenv.Obj{"cpu": "64"}}
		}},
		{"oomkilled", "RuntimeError", "CrashLoopBackOff", "container asya-runtime keeps crashing: exit code 137 (OOMKilled)", func(c testenv.Obj) {
			c["env"] = []any{testenv.Obj{"name": "ASYA_HANDLER", "value": "greedy.process"}}
			c["resources"] = testenv.Obj{"limits": testenv.Obj{"memory": "64Mi"}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := nodeActor(ns, c.name, "rabbitmq", "handlers.process")
			c.mutate(runtimeContainer(a))
			runActor(t, ctx, d, a)
			took := awaitStatus(t, ctx, d, ns, c.name, c.status, 2*time.Minute, func(s testenv.Obj) error {
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
