//go:build e2e

package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestNodeDrain: a pod deleted in the middle of a slow message finishes it
// within gracefulShutdown, routes its result once, and only then stops.
func TestNodeDrain(t *testing.T) {
	d := nodeDriver(t)
	for _, b := range nodeBrokers {
		t.Run(b.Transport, func(t *testing.T) {
			ctx := context.Background()
			ns := nodeNamespace(t, ctx, "node-e2e-drain-"+b.Transport, nil)
			name := b.Name("drain")
			happy := newCollector(t, ctx, b, "happy-end")
			pods := runReadyActor(t, ctx, d, nodeActor(ns, name, b.Transport, "handlers.process"))
			slow := message(name, testenv.Obj{"seconds": 8})
			b.Send(t, ctx, name, slow)
			time.Sleep(2 * time.Second)
			pod := testenv.Str(pods[0], "metadata", "name")
			start := time.Now()
			if err := env.Cluster.Client.Delete(ctx, podsGVR, ns, pod); err != nil {
				t.Fatal(err)
			}
			got := happy.await(t, ctx, 25*time.Second, slow.ID)
			env.Timed("node: "+b.Transport+" drain (delete → result)", start)
			if by := got[slow.ID][0].Payload.(map[string]any)["pod"]; by != pod {
				t.Errorf("the slow message was finished by %v, want the deleted pod %s", by, pod)
			}
			// A replacement pod would get the message again had it not been
			// acknowledged.
			if _, err := waitPodsReady(ctx, ns, "asya.sh/asya="+name, 1, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			happy.await(t, ctx, 0, slow.ID)
			if n := len(happy.got[slow.ID]); n != 1 {
				t.Errorf("the slow message's result arrived %d times, want once", n)
			}
		})
	}
}

// TestNodeScalesFromZero: with real consumers, KEDA's operator takes an
// idle actor from zero to one on queued messages, the HPA controller
// (reading KEDA's metrics server through the aggregation layer) from one
// to more, the pods drain the queue, and the actor goes back to zero after
// the cooldown; the status follows.
func TestNodeScalesFromZero(t *testing.T) {
	testenv.NeedKEDA(t)
	d := nodeDriver(t)
	for _, b := range nodeBrokers {
		t.Run(b.Transport, func(t *testing.T) {
			ctx := context.Background()
			ns := nodeNamespace(t, ctx, "node-e2e-scale-"+b.Transport, nil)
			name := b.Name("scaled")
			happy := newCollector(t, ctx, b, "happy-end")
			a := nodeActor(ns, name, b.Transport, "handlers.process")
			spec := testenv.MapAt(a, "spec")
			// SQS hides a received message for twice the processing timeout.
			testenv.MapAt(spec, "timeout")["processing"] = 10
			spec["scaling"] = testenv.Obj{"enabled": true, "minReplicas": 0, "maxReplicas": 3, "queueLength": 1,
				"pollingInterval": 2, "cooldownPeriod": 6}
			runActor(t, ctx, d, a)
			awaitStatus(t, ctx, d, ns, name, "Napping", 2*time.Minute, nil)

			seen := observe(ctx, d, ns, name)
			var ids []string
			start := time.Now()
			for i := range 12 {
				m := message(name, testenv.Obj{"n": i, "seconds": 2})
				ids = append(ids, m.ID)
				b.Send(t, ctx, name, m)
			}
			if _, err := waitPodsReady(ctx, ns, "asya.sh/asya="+name, 1, 90*time.Second); err != nil {
				t.Fatal(err)
			}
			env.Timed("node: "+b.Transport+" scale 0 → 1 (messages → pod Ready)", start)
			if _, err := waitPodsReady(ctx, ns, "asya.sh/asya="+name, 2, 90*time.Second); err != nil {
				t.Fatalf("no second replica: the HPA did not scale past one: %v", err)
			}
			env.Timed("node: "+b.Transport+" scale 1 → N (messages → 2 pods Ready)", start)
			got := happy.await(t, ctx, 2*time.Minute, ids...)
			env.Timed("node: "+b.Transport+" 12 messages of 2 s processed", start)
			for _, id := range ids {
				if n := len(got[id]); n != 1 {
					t.Errorf("message %s: %d results, want 1", id, n)
				}
			}
			drained := time.Now()
			awaitStatus(t, ctx, d, ns, name, "Napping", 2*time.Minute, func(testenv.Obj) error {
				pods, _ := env.Cluster.Client.List(ctx, podsGVR, ns, "asya.sh/asya="+name)
				if len(pods) > 0 {
					return fmt.Errorf("%d pods left", len(pods))
				}
				return nil
			})
			env.Timed("node: "+b.Transport+" back to zero after the drain", drained)
			o := seen()
			t.Logf("statuses seen: %v; at most %d ready replicas reported", o.statuses, o.maxReady)
			if !testenv.Contains(o.statuses, "ScalingUp") && !testenv.Contains(o.statuses, "Running") {
				t.Errorf("the status never left Napping while scaled up: %v", o.statuses)
			}
			if o.maxReady < 2 {
				t.Errorf("the status reported at most %d ready replicas, want the HPA's 2 or more", o.maxReady)
			}
		})
	}
}

// observed is what the actor's status said while observe ran.
type observed struct {
	statuses []string // each status.status taken, in order
	maxReady int      // the most status.readyReplicas
}

// observe samples the actor's status until the returned function is
// called, which returns what it saw.
func observe(ctx context.Context, d *testenv.Driver, ns, name string) func() observed {
	var mu sync.Mutex
	var o observed
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			a, err := env.Cluster.Client.Get(ctx, d.Parent, ns, name)
			if err != nil {
				continue
			}
			s := testenv.Str(a, "status", "status")
			ready, _ := testenv.Field(a, "status", "readyReplicas").(float64)
			mu.Lock()
			if len(o.statuses) == 0 || o.statuses[len(o.statuses)-1] != s {
				o.statuses = append(o.statuses, s)
			}
			o.maxReady = max(o.maxReady, int(ready))
			mu.Unlock()
		}
	}()
	var once sync.Once
	return func() observed {
		once.Do(func() { close(stop); <-done })
		mu.Lock()
		defer mu.Unlock()
		return o
	}
}

// TestNodeRestricted: in a namespace that enforces Pod Security
// "restricted", the default children run with the built images: the
// runtime and the sidecar as different non-root users sharing the socket.
func TestNodeRestricted(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	ns := nodeNamespace(t, ctx, "node-e2e-restricted", testenv.Obj{"pod-security.kubernetes.io/enforce": "restricted"})
	b := nodeBrokers[0]
	happy := newCollector(t, ctx, b, "happy-end")
	runReadyActor(t, ctx, d, restrictedActor(nodeActor(ns, "restricted", b.Transport, "handlers.process")))
	m := message("restricted", testenv.Obj{"n": 1})
	b.Send(t, ctx, "restricted", m)
	happy.await(t, ctx, 30*time.Second, m.ID)
}

// restrictedActor makes the user's part of the actor's pod meet Pod
// Security "restricted": the runtime runs as uid 2000.
func restrictedActor(a testenv.Obj) testenv.Obj {
	pod := testenv.MapAt(a, "spec", "workload", "template", "spec")
	pod["securityContext"] = testenv.Obj{"runAsNonRoot": true, "seccompProfile": testenv.Obj{"type": "RuntimeDefault"}}
	runtimeContainer(a)["securityContext"] = testenv.Obj{"runAsUser": 2000, "allowPrivilegeEscalation": false,
		"capabilities": testenv.Obj{"drop": []any{"ALL"}}}
	return a
}

// TestNodeReadyOnlyOnceServing: a runtime that takes 6 s to load its
// handler keeps its pod unready until it serves, through the probes
// asya-sync adds.
func TestNodeReadyOnlyOnceServing(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	ns := nodeNamespace(t, ctx, "node-e2e-probes", nil)
	pods := runReadyActor(t, ctx, d, nodeActor(ns, "slowstart", "rabbitmq", "slowstart.process"))
	started := containerStarted(pods[0], "asya-runtime")
	ready := conditionTime(pods[0], "Ready")
	if started.IsZero() || ready.Sub(started) < 5*time.Second {
		t.Errorf("pod Ready at %s, runtime started at %s: want Ready only after the 6 s load", ready, started)
	}
	t.Logf("runtime started %s, pod Ready %s later", started.Format(time.RFC3339), ready.Sub(started))
}

func containerStarted(pod testenv.Obj, name string) time.Time {
	cs, _ := testenv.Field(pod, "status", "containerStatuses").([]any)
	for _, c := range cs {
		if testenv.Str(c.(testenv.Obj), "name") == name {
			at, _ := time.Parse(time.RFC3339, testenv.Str(c.(testenv.Obj), "state", "running", "startedAt"))
			return at
		}
	}
	return time.Time{}
}

func conditionTime(pod testenv.Obj, typ string) time.Time {
	conds, _ := testenv.Field(pod, "status", "conditions").([]any)
	for _, c := range conds {
		if testenv.Str(c.(testenv.Obj), "type") == typ {
			at, _ := time.Parse(time.RFC3339, testenv.Str(c.(testenv.Obj), "lastTransitionTime"))
			return at
		}
	}
	return time.Time{}
}

// TestNodeUpgradeKeepsMessages: a new handler env rolls the workload while
// messages wait on the queue; none is lost, and the new pods answer.
func TestNodeUpgradeKeepsMessages(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	ns := nodeNamespace(t, ctx, "node-e2e-upgrade", nil)
	b := nodeBrokers[0]
	happy := newCollector(t, ctx, b, "happy-end")
	runReadyActor(t, ctx, d, nodeActor(ns, "upgrade", b.Transport, "handlers.process"))
	var ids []string
	for i := range 6 {
		m := message("upgrade", testenv.Obj{"n": i, "seconds": 1})
		ids = append(ids, m.ID)
		b.Send(t, ctx, "upgrade", m)
	}
	setHandlerEnv(t, ctx, d, ns, "upgrade", "HANDLER_VERSION", "v2")
	got := happy.await(t, ctx, 2*time.Minute, ids...)
	for _, id := range ids {
		if n := len(got[id]); n != 1 {
			t.Errorf("message %s: %d results, want 1", id, n)
		}
	}
	// Once rolled, the new pods answer with the new env.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m := message("upgrade", testenv.Obj{"probe": true})
		b.Send(t, ctx, "upgrade", m)
		r := happy.await(t, ctx, 30*time.Second, m.ID)[m.ID][0]
		if r.Payload.(map[string]any)["version"] == "v2" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still answered by the old pods 2 min after the change: %s", testenv.MustJSON(r))
		}
		time.Sleep(time.Second)
	}
}

// setHandlerEnv sets an env var of the actor's runtime container.
func setHandlerEnv(t *testing.T, ctx context.Context, d *testenv.Driver, ns, name, key, value string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		a, err := env.Cluster.Client.Get(ctx, d.Parent, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		c := runtimeContainer(a)
		envs, _ := c["env"].([]any)
		c["env"] = append(envs, testenv.Obj{"name": key, "value": value})
		_, err = env.Cluster.Client.Do(ctx, "PUT", d.Parent.Path(ns, name), a, "application/json")
		if err == nil {
			return
		}
		if !testenv.IsStatus(err, 409) || attempt > 5 {
			t.Fatalf("update %s: %v", name, err)
		}
	}
}

// TestNodeRuntimeScriptRolls: an upgrade of asya-sync to a release with
// another runtime script restarts no actor's pods (runtimeUpdate Pinned,
// the default): every workload names the runtime held back, as
// docs/upgrade.md's listing shows, and its pod keeps running and
// answering. Annotating one actor asya.sh/runtime-update: Immediate rolls
// that actor's pods alone to the new script, and the new pod answers;
// docs/upgrade.md's paced loop, run as printed, then rolls the other one,
// leaves alone an actor its user annotated asya.sh/runtime-update:
// Pinned, and gives up on an actor whose spec turned invalid (it never
// takes the new runtime) after WAIT seconds, removing its own annotation
// and naming the actor.
func TestNodeRuntimeScriptRolls(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	ns := nodeNamespace(t, ctx, "node-e2e-script", nil)
	b := nodeBrokers[0]
	happy := newCollector(t, ctx, b, "happy-end")
	const rolled, pinned, kept, invalid = "script", "script-pinned", "script-kept", "script-invalid"
	all := []string{rolled, pinned, kept, invalid}
	before := map[string]testenv.Obj{}
	for _, name := range all {
		a := nodeActor(ns, name, b.Transport, "handlers.process")
		if name == kept {
			testenv.MapAt(a, "metadata")["annotations"] = testenv.Obj{"asya.sh/runtime-update": "Pinned"}
		}
		before[name] = runReadyActor(t, ctx, d, a)[0]
	}
	old := testenv.Str(before[rolled], "metadata", "annotations", "asya.sh/runtime-hash")
	start := time.Now()
	useNodeService(t, ctx, nodeSetup{tag: "e2e-next", delivery: nodeDefault.delivery})
	var next string
	for _, name := range all {
		next = awaitRuntimePending(t, ctx, ns, name, old, time.Minute)
		if next == old {
			t.Fatalf("%s: the runtime held back is the one its pods run, %s", name, old)
		}
	}
	env.Timed("node: service upgrade → every actor holds the new runtime back", start)
	listing := upgradeDocBlock(t, "## Checking which actors run which runtime", "kubectl get")
	out, err := quickStartRun(ctx, t.TempDir(), listing)
	if err != nil {
		t.Fatalf("docs/upgrade.md's listing:\n%s\n%v\n%s", listing, err, out)
	}
	for _, name := range all {
		if want := regexp.MustCompile(`(?m)^` + ns + `\s+` + name + `\s+` + old + `\s+` + next + `\s*$`); !want.MatchString(out) {
			t.Errorf("docs/upgrade.md's listing shows no line %q:\n%s", want, out)
		}
	}
	// More syncs by the new service change nothing.
	time.Sleep(5 * time.Second)
	for _, name := range all {
		requireSamePod(t, ctx, ns, name, before[name], old)
	}
	// asya-runtime with a command of its own: admissible, invalid. The
	// actor keeps its children as they are, runtime-pending included.
	broken := testenv.Obj{"spec": testenv.Obj{"workload": testenv.Obj{"template": testenv.Obj{"spec": testenv.Obj{"containers": []any{
		testenv.Obj{"name": "asya-runtime", "image": testenv.NodeImage("runtime"), "command": []any{"python3", "-m", "mine"}},
	}}}}}}
	if _, err := env.Cluster.Client.Do(ctx, "PATCH", d.Parent.Path(ns, invalid), broken, "application/merge-patch+json"); err != nil {
		t.Fatalf("make %s invalid: %v", invalid, err)
	}
	awaitStatus(t, ctx, d, ns, invalid, "WorkloadError", time.Minute, nil)
	requireSamePod(t, ctx, ns, invalid, before[invalid], old)

	start = time.Now()
	patch := testenv.Obj{"metadata": testenv.Obj{"annotations": testenv.Obj{"asya.sh/runtime-update": "Immediate"}}}
	if _, err := env.Cluster.Client.Do(ctx, "PATCH", d.Parent.Path(ns, rolled), patch, "application/merge-patch+json"); err != nil {
		t.Fatalf("annotate %s: %v", rolled, err)
	}
	pod := awaitRolled(t, ctx, ns, rolled, next)
	env.Timed("node: actor opted in → its pod rolled to the new runtime", start)
	requireSamePod(t, ctx, ns, pinned, before[pinned], old)
	answeredBy := func(name string, want testenv.Obj) {
		t.Helper()
		m := message(name, testenv.Obj{"n": 1})
		b.Send(t, ctx, name, m)
		got := happy.await(t, ctx, 30*time.Second, m.ID)[m.ID][0]
		if by := got.Payload.(map[string]any)["pod"]; by != testenv.Str(want, "metadata", "name") {
			t.Errorf("%s: answered by %v, want %s", name, by, testenv.Str(want, "metadata", "name"))
		}
	}
	answeredBy(rolled, pod)
	answeredBy(pinned, before[pinned])

	start = time.Now()
	loop := upgradeDocBlock(t, "## Rolling the new runtime, paced", "PAUSE=")
	out, err = quickStartRun(ctx, t.TempDir(), "PAUSE=1\nWAIT=15\n"+loop)
	t.Logf("docs/upgrade.md's paced loop:\n%s", out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("docs/upgrade.md's paced loop ended with %v, want it to fail naming %s, which it could not roll\n%s", err, invalid, out)
	}
	if want := regexp.MustCompile(`(?m)^not rolled:.* ` + ns + `/` + invalid + `( |$)`); !want.MatchString(out) {
		t.Errorf("docs/upgrade.md's paced loop does not name %s as not rolled", invalid)
	}
	if want := regexp.MustCompile(`(?m)^` + ns + `/` + kept + `: left alone`); !want.MatchString(out) {
		t.Errorf("docs/upgrade.md's paced loop does not say it left %s alone", kept)
	}
	requireSamePod(t, ctx, ns, pinned, awaitRolled(t, ctx, ns, pinned, next), next)
	requireSamePod(t, ctx, ns, rolled, pod, next)
	requireSamePod(t, ctx, ns, kept, before[kept], old)
	requireSamePod(t, ctx, ns, invalid, before[invalid], old)
	env.Timed("node: docs/upgrade.md's paced loop → the last actor rolled", start)
	for name, want := range map[string]any{pinned: nil, invalid: nil, kept: "Pinned", rolled: "Immediate"} {
		a, err := env.Cluster.Client.Get(ctx, d.Parent, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := testenv.MapAt(a, "metadata", "annotations")["asya.sh/runtime-update"]; got != want {
			t.Errorf("after the paced loop %s is annotated asya.sh/runtime-update: %v, want %v", name, got, want)
		}
	}
}

// upgradeDocBlock is docs/upgrade.md's sh block after heading that starts
// with first.
func upgradeDocBlock(t *testing.T, heading, first string) string {
	t.Helper()
	block, err := testenv.DocFence(filepath.Join(env.Root, "docs", "upgrade.md"), heading, "sh", first)
	if err != nil {
		t.Fatal(err)
	}
	return block
}

// awaitRolled waits until the actor has one pod, Ready, given the runtime
// of that hash, and returns it.
func awaitRolled(t *testing.T, ctx context.Context, ns, name, hash string) testenv.Obj {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, err := env.Cluster.Client.List(ctx, podsGVR, ns, "asya.sh/asya="+name)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) == 1 && podReady(pods[0]) && testenv.Field(pods[0], "metadata", "deletionTimestamp") == nil &&
			testenv.Str(pods[0], "metadata", "annotations", "asya.sh/runtime-hash") == hash {
			return pods[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no pod with runtime %s alone and Ready after 2 min\n%s", name, hash, podReport(ctx, ns, "asya.sh/asya="+name))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// awaitRuntimePending waits until the actor's workload names a runtime its
// pods do not run yet (asya.sh/runtime-pending), and returns it; it fails
// at once when the workload's pods are given another runtime than running.
func awaitRuntimePending(t *testing.T, ctx context.Context, ns, name, running string, within time.Duration) string {
	t.Helper()
	deployments := testenv.GVR{APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
	deadline := time.Now().Add(within)
	for {
		dep, err := env.Cluster.Client.Get(ctx, deployments, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if given := testenv.Str(dep, "spec", "template", "metadata", "annotations", "asya.sh/runtime-hash"); given != running {
			t.Fatalf("Deployment %s/%s: the upgrade gave its pods another runtime (%s, they ran %s): they roll\n%s",
				ns, name, given, running, podReport(ctx, ns, "asya.sh/asya="+name))
		}
		if pending := testenv.Str(dep, "metadata", "annotations", "asya.sh/runtime-pending"); pending != "" {
			return pending
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deployment %s/%s names no pending runtime %s after the upgrade (asya.sh/template-hash %q)",
				ns, name, within, testenv.Str(dep, "metadata", "annotations", "asya.sh/template-hash"))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// requireSamePod fails unless the actor's one pod is still the one it had,
// Ready, with the runtime hash it had.
func requireSamePod(t *testing.T, ctx context.Context, ns, name string, was testenv.Obj, hash string) {
	t.Helper()
	pods, err := env.Cluster.Client.List(ctx, podsGVR, ns, "asya.sh/asya="+name)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || testenv.Str(pods[0], "metadata", "uid") != testenv.Str(was, "metadata", "uid") || !podReady(pods[0]) ||
		testenv.Str(pods[0], "metadata", "annotations", "asya.sh/runtime-hash") != hash {
		t.Fatalf("%s: its pod %s (runtime %s) did not stay alone and Ready\n%s", name, testenv.Str(was, "metadata", "name"), hash,
			podReport(ctx, ns, "asya.sh/asya="+name))
	}
}

// TestNodeLivenessRestartsRuntime: a runtime that stops serving (its socket
// gone) leaves its pod unready through the readiness probe, is restarted
// by the liveness probe, and the actor says so, then recovers.
func TestNodeLivenessRestartsRuntime(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	ns := nodeNamespace(t, ctx, "node-e2e-liveness", nil)
	b := nodeBrokers[0]
	happy := newCollector(t, ctx, b, "happy-end")
	pods := runReadyActor(t, ctx, d, nodeActor(ns, "live", b.Transport, "handlers.process"))
	awaitStatus(t, ctx, d, ns, "live", "Running", 30*time.Second, nil)
	sock := filepath.Join(env.Node.Dir, "kubelet", "pods", testenv.Str(pods[0], "metadata", "uid"),
		"volumes", "kubernetes.io~empty-dir", "socket-dir", "asya-runtime.sock")
	if err := os.Remove(sock); err != nil {
		t.Fatalf("the runtime's socket, seen from the node: %v", err)
	}
	start := time.Now()
	awaitActor(t, ctx, d, ns, "live", 2*time.Minute, "reporting no ready replica", func(s testenv.Obj) error {
		if ready, _ := s["readyReplicas"].(float64); ready != 0 {
			return fmt.Errorf("%v ready", ready)
		}
		return nil
	})
	env.Timed("node: runtime stops serving → actor reports 0 ready", start)
	awaitStatus(t, ctx, d, ns, "live", "Running", 3*time.Minute, func(s testenv.Obj) error {
		p, err := env.Cluster.Client.Get(ctx, podsGVR, ns, testenv.Str(pods[0], "metadata", "name"))
		if err != nil {
			return err
		}
		if restarts := containerRestarts(p, "asya-runtime"); restarts < 1 {
			return fmt.Errorf("runtime not restarted yet")
		}
		if ready, _ := s["readyReplicas"].(float64); ready != 1 {
			return fmt.Errorf("%v ready", ready)
		}
		return nil
	})
	env.Timed("node: runtime stops serving → restarted, actor Running", start)
	m := message("live", testenv.Obj{"n": 1})
	b.Send(t, ctx, "live", m)
	happy.await(t, ctx, 30*time.Second, m.ID)
}

func containerRestarts(pod testenv.Obj, name string) int {
	cs, _ := testenv.Field(pod, "status", "containerStatuses").([]any)
	for _, c := range cs {
		if testenv.Str(c.(testenv.Obj), "name") == name {
			n, _ := testenv.Field(c.(testenv.Obj), "restartCount").(float64)
			return int(n)
		}
	}
	return 0
}

// useNodeService upgrades the node's asya-sync to the setup until the test
// ends, then back to the default.
func useNodeService(t *testing.T, ctx context.Context, r nodeSetup) {
	t.Helper()
	if err := helmNodeService(ctx, "upgrade", r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := helmNodeService(ctx, "upgrade", nodeDefault); err != nil {
			t.Errorf("asya-sync back to %+v: %v", nodeDefault, err)
		}
	})
}

// TestNodeRuntimeDelivery: with runtimeDelivery podTemplate the runtime
// script reaches the pod through the downward API, and with initContainer
// through asya-sync's own image; no ConfigMap exists either way, and the
// pod, in a namespace that enforces Pod Security "restricted", processes
// messages.
func TestNodeRuntimeDelivery(t *testing.T) {
	d := nodeDriver(t)
	for _, delivery := range []string{"podTemplate", "initContainer"} {
		t.Run(delivery, func(t *testing.T) {
			ctx := context.Background()
			ns := nodeNamespace(t, ctx, "node-e2e-"+strings.ToLower(delivery), testenv.Obj{"pod-security.kubernetes.io/enforce": "restricted"})
			useNodeService(t, ctx, nodeSetup{tag: nodeDefault.tag, delivery: delivery})
			b := nodeBrokers[0]
			happy := newCollector(t, ctx, b, "happy-end")
			runReadyActor(t, ctx, d, restrictedActor(nodeActor(ns, "inline", b.Transport, "handlers.process")))
			cms, err := env.Cluster.Client.List(ctx, testenv.GVR{APIVersion: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, ns, "asya.sh/asya=inline")
			if err != nil || len(cms) != 0 {
				t.Errorf("ConfigMaps of the actor: %d (%v), want none", len(cms), err)
			}
			m := message("inline", testenv.Obj{"n": 1})
			b.Send(t, ctx, "inline", m)
			happy.await(t, ctx, 30*time.Second, m.ID)
		})
	}
}
