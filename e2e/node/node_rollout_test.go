//go:build e2e

package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// A release of its own, as the chart installs it by default: two replicas
// behind their Service, the PodDisruptionBudget, the drain delay. Its hooks
// are called through the Service while it rolls, drains and crashes.
const (
	rolloutNS       = "asya-rollout"
	rolloutRelease  = "asya-sync-rollout"
	rolloutSelector = "app.kubernetes.io/instance=" + rolloutRelease
	// loadActors is how many actors the load calls the hooks for, one
	// worker each, as Metacontroller's workers take one actor at a time.
	loadActors = 3
)

// rolloutValues: the chart's defaults but for the image, the controller's
// name and one RabbitMQ transport at the node's address.
// ASYA_E2E_DRAIN_DELAY sets drainDelaySeconds, to show what the defaults
// prevent (0: the listeners close on SIGTERM).
func rolloutValues(tag string) string {
	delay := ""
	if d := os.Getenv("ASYA_E2E_DRAIN_DELAY"); d != "" {
		delay = "drainDelaySeconds: " + d + "\n"
	}
	return fmt.Sprintf(`image: {repository: e2e.local/asya-sync, tag: %s, pullPolicy: Never}
compositeController: {name: %s}
%sconfig:
  sidecarImage: %s
  transports:
    rabbitmq:
      type: rabbitmq
      enabled: true
      config: {host: %s, port: 5672, username: guest, exchange: asya-rollout}
`, tag, rolloutRelease, delay, testenv.NodeImage("sidecar"), testenv.NodeIP)
}

// TestNodeHookCallsThroughRollouts: while a client calls customize, sync
// and finalize through the Service without pause, as Metacontroller does,
// no call fails when helm upgrade rolls the service to a new image, when
// kubectl rollout restart rolls it, or when the node is drained within the
// PodDisruptionBudget; when a replica is killed, the calls that fail do so
// for a bounded time and every actor's next calls succeed.
func TestNodeHookCallsThroughRollouts(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	testenv.EnsureNamespace(t, ctx, rolloutNS, false)
	helmRollout(t, "install", "e2e")
	t.Cleanup(func() {
		if _, err := env.Helm("uninstall", rolloutRelease, "-n", rolloutNS); err != nil {
			t.Errorf("uninstall: %v", err)
		}
	})
	if _, err := waitPodsReady(ctx, rolloutNS, rolloutSelector, 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	hooks := newLoadHooks(t, ctx)
	t.Cleanup(func() { hooks.releaseQueues(t, ctx) })
	hooks.awaitRouted(t, ctx)
	var figures []string
	defer func() { t.Log("figures:\n" + strings.Join(figures, "\n")) }()

	t.Run("helm upgrade", func(t *testing.T) {
		old := rolloutPods(t, ctx)
		load := hooks.start(t, ctx)
		load.mark("helm upgrade")
		helmRollout(t, "upgrade", "e2e-next")
		awaitReplaced(t, ctx, old, 3*time.Minute)
		figures = append(figures, load.finish(t, "helm upgrade (new image)", true, ""))
	})
	t.Run("rollout restart", func(t *testing.T) {
		old := rolloutPods(t, ctx)
		load := hooks.start(t, ctx)
		load.mark("rollout restart")
		testenv.Kubectl(t, "-n", rolloutNS, "rollout", "restart", "deployment/"+rolloutRelease)
		awaitReplaced(t, ctx, old, 3*time.Minute)
		figures = append(figures, load.finish(t, "kubectl rollout restart", true, ""))
	})
	t.Run("node drain", func(t *testing.T) {
		old := rolloutPods(t, ctx)
		load := hooks.start(t, ctx)
		load.mark("kubectl drain")
		drainNode(t, ctx, old)
		awaitReplaced(t, ctx, old, 3*time.Minute)
		figures = append(figures, load.finish(t, "node drain within the PDB", true, ""))
	})
	t.Run("replica killed", func(t *testing.T) {
		load := hooks.start(t, ctx)
		pod := busiestPod(t, ctx)
		pid := containerPID(t, ctx, pod, "asya-sync")
		load.mark("kill -9")
		killed := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d: %v", pid, err)
		}
		awaitRestarted(t, ctx, testenv.Str(pod, "metadata", "name"), 2*time.Minute)
		back := fmt.Sprintf(" the killed replica restarted and Ready %.1f s after the kill", time.Since(killed).Seconds())
		figures = append(figures, load.finish(t, "kill -9 of one replica", false, back))
	})
}

// helmRollout installs or upgrades the release with the image tag given.
func helmRollout(t *testing.T, verb, tag string) {
	t.Helper()
	values := filepath.Join(env.Work, "rollout-values.yaml")
	if err := os.WriteFile(values, []byte(rolloutValues(tag)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Helm(verb, rolloutRelease, "./chart", "-n", rolloutNS, "-f", values); err != nil {
		t.Fatal(err)
	}
}

// rolloutPods is the release's pods by name.
func rolloutPods(t *testing.T, ctx context.Context) map[string]testenv.Obj {
	t.Helper()
	pods, err := env.Cluster.Client.List(ctx, podsGVR, rolloutNS, rolloutSelector)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]testenv.Obj{}
	for _, p := range pods {
		out[testenv.Str(p, "metadata", "name")] = p
	}
	return out
}

// awaitReplaced waits until the release runs two Ready pods, none of old,
// and no other: the old ones drained and gone.
func awaitReplaced(t *testing.T, ctx context.Context, old map[string]testenv.Obj, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		pods := rolloutPods(t, ctx)
		done := len(pods) == 2
		for name, p := range pods {
			if old[name] != nil || !podReady(p) || testenv.Field(p, "metadata", "deletionTimestamp") != nil {
				done = false
			}
		}
		if done {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("the release's pods not replaced by two Ready ones within %s\n%s", within, podReport(ctx, rolloutNS, rolloutSelector))
}

// drainNode drains the node of the release's pods with kubectl drain, as
// an administrator drains a node, and says what a drain means with one
// node: kubectl cordons it and evicts the pods through the Eviction API.
// The PodDisruptionBudget lets one replica go; its replacement cannot run
// on the cordoned node, as it would on another, so it waits Pending while
// the other replica serves alone and the budget refuses its eviction.
// Uncordoning then stands in for the other node: the replacement runs,
// the budget lets the second replica go, and the drain completes.
func drainNode(t *testing.T, ctx context.Context, old map[string]testenv.Obj) {
	t.Helper()
	uncordon := func() { testenv.Kubectl(t, "uncordon", testenv.NodeName) }
	defer uncordon()
	cmd := exec.Command(filepath.Join(env.Bin, "kubectl"), "--kubeconfig", env.Cluster.Kubeconfig, "drain", testenv.NodeName,
		"--pod-selector="+rolloutSelector, "--delete-emptydir-data", "--timeout=3m")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- cmd.Wait() }()
	// One old replica gone, the other Ready and not evicted, the
	// replacement Pending.
	alone := func() bool {
		left, pending := 0, 0
		for name, p := range rolloutPods(t, ctx) {
			switch {
			case old[name] != nil && podReady(p) && testenv.Field(p, "metadata", "deletionTimestamp") == nil:
				left++
			case old[name] != nil:
				return false
			case testenv.Str(p, "status", "phase") == "Pending" && testenv.Str(p, "spec", "nodeName") == "":
				pending++
			}
		}
		return left == 1 && pending == 1
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !alone() {
		if time.Now().After(deadline) {
			t.Fatalf("no point where one replica served alone within 2 min; kubectl drain:\n%s\n%s", out.String(), podReport(ctx, rolloutNS, rolloutSelector))
		}
		select {
		case err := <-drained:
			t.Fatalf("kubectl drain ended (%v) with one replica left on the node:\n%s", err, out.String())
		case <-time.After(250 * time.Millisecond):
		}
	}
	// kubectl drain tries the refused eviction again every 5 s.
	time.Sleep(6 * time.Second)
	if !alone() {
		t.Fatalf("the second replica went while the first one's replacement could not run:\n%s", podReport(ctx, rolloutNS, rolloutSelector))
	}
	if !strings.Contains(out.String(), "disruption budget") {
		t.Errorf("kubectl drain was not refused by the disruption budget:\n%s", out.String())
	}
	uncordon()
	select {
	case err := <-drained:
		if err != nil {
			t.Fatalf("kubectl drain: %v\n%s", err, out.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("kubectl drain still running after 3 min:\n%s", out.String())
	}
}

// busiestPod is the release's pod that answers the most hook calls now,
// by the growth of its asya_sync_hook_calls_total over half a second: the
// replica whose crash the load's connections feel.
func busiestPod(t *testing.T, ctx context.Context) testenv.Obj {
	t.Helper()
	count := func(p testenv.Obj) float64 {
		resp, err := http.Get("http://" + testenv.Str(p, "status", "podIP") + ":9090/metrics")
		if err != nil {
			t.Fatalf("metrics of %s: %v", testenv.Str(p, "metadata", "name"), err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		total := 0.0
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "asya_sync_hook_calls_total{") {
				var v float64
				if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
					total += v
				}
			}
		}
		return total
	}
	pods := rolloutPods(t, ctx)
	before := map[string]float64{}
	for name, p := range pods {
		before[name] = count(p)
	}
	time.Sleep(500 * time.Millisecond)
	var busiest testenv.Obj
	most := -1.0
	for name, p := range pods {
		if grown := count(p) - before[name]; grown > most {
			busiest, most = p, grown
		}
	}
	return busiest
}

// containerPID is the host's process id of a container of the pod, as
// containerd's task list has it.
func containerPID(t *testing.T, ctx context.Context, pod testenv.Obj, container string) int {
	t.Helper()
	p, err := env.Cluster.Client.Get(ctx, podsGVR, testenv.Str(pod, "metadata", "namespace"), testenv.Str(pod, "metadata", "name"))
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	statuses, _ := testenv.Field(p, "status", "containerStatuses").([]any)
	for _, s := range statuses {
		if testenv.Str(s.(testenv.Obj), "name") == container {
			id = strings.TrimPrefix(testenv.Str(s.(testenv.Obj), "containerID"), "containerd://")
		}
	}
	out, err := exec.Command(filepath.Join(env.Node.CtrdBin, "ctr"), "--address", env.Node.Sock, "--namespace", "k8s.io",
		"tasks", "list").Output()
	if err != nil {
		t.Fatalf("ctr tasks list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		var pid int
		if id != "" && len(f) >= 3 && f[0] == id && f[2] == "RUNNING" {
			if _, err := fmt.Sscan(f[1], &pid); err == nil && pid > 1 {
				return pid
			}
		}
	}
	t.Fatalf("no running task of container %s %q:\n%s", container, id, out)
	return 0
}

// awaitRestarted waits until the pod's container has restarted and the
// release has two Ready pods again.
func awaitRestarted(t *testing.T, ctx context.Context, name string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		pods := rolloutPods(t, ctx)
		ready := 0
		for _, p := range pods {
			if podReady(p) {
				ready++
			}
		}
		if p := pods[name]; p != nil && containerRestarts(p, "asya-sync") > 0 && ready == 2 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("pod %s not restarted and Ready within %s\n%s", name, within, podReport(ctx, rolloutNS, rolloutSelector))
}

// loadHooks are the release's three hooks as Metacontroller 4.16 and later
// calls them: each hook with a client of its own, Go's default transport
// cloned with the CA bundle (so HTTP/2 over TLS, keep-alive, a 30 s dial
// and 90 s idle timeout) and the hook's timeout; the connection dialled to
// the Service's cluster IP. A second set speaks HTTP/1.1 keep-alive, as
// the same client does with plain-HTTP hooks.
type loadHooks struct {
	cc            testenv.Obj
	urls          map[string]string
	authorization string
	h2, h1        map[string]*http.Client
}

var hookNames = []string{"customize", "sync", "finalize"}

func newLoadHooks(t *testing.T, ctx context.Context) *loadHooks {
	t.Helper()
	k := env.Cluster.Client
	r, err := k.ByKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		t.Fatal(err)
	}
	cc, err := k.Get(ctx, r, "", rolloutRelease)
	if err != nil {
		t.Fatal(err)
	}
	l := &loadHooks{cc: cc, urls: map[string]string{}, h2: map[string]*http.Client{}, h1: map[string]*http.Client{}}
	for _, h := range hookNames {
		wh, err := testenv.NewWebhook(ctx, k, testenv.MapAt(cc, "spec", "hooks", h, "webhook"))
		if err != nil {
			t.Fatalf("%s hook: %v", h, err)
		}
		l.urls[h], l.authorization = wh.URL, wh.Authorization
		for _, http1 := range []bool{false, true} {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.TLSClientConfig = wh.Client.Transport.(*http.Transport).TLSClientConfig.Clone()
			tr.DialContext = dialService
			c := &http.Client{Timeout: wh.Client.Timeout, Transport: tr}
			if http1 {
				tr.Protocols = new(http.Protocols)
				tr.Protocols.SetHTTP1(true)
				l.h1[h] = c
			} else {
				l.h2[h] = c
			}
		}
	}
	return l
}

// awaitRouted waits until a call through the Service is answered: a
// Service whose Ready pods kube-proxy has not written yet refuses
// connections, which would count against the first phase.
func (l *loadHooks) awaitRouted(t *testing.T, ctx context.Context) {
	t.Helper()
	body := l.requests(0, true)["customize"]
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err = l.call(ctx, l.h2["customize"], "customize", body); err == nil {
			return
		}
	}
	t.Fatalf("the Service answers no call within 1 min: %v", err)
}

// requests are one actor's customize, sync and finalize requests as
// Metacontroller sends them (hook version v2). The actor retains its queue
// (asya.sh/queue-deletion-policy: Retain), so finalize touches no broker.
func (l *loadHooks) requests(i int, retain bool) map[string][]byte {
	name := fmt.Sprintf("hookload-%d", i)
	a := nodeActor(rolloutNS, name, "rabbitmq", "handlers.echo")
	meta := testenv.MapAt(a, "metadata")
	meta["uid"] = fmt.Sprintf("6f1c2a4e-0000-4000-8000-%012d", i)
	meta["generation"] = 1
	meta["creationTimestamp"] = "2026-01-01T00:00:00Z"
	if retain {
		meta["annotations"] = testenv.Obj{"asya.sh/queue-deletion-policy": "Retain"}
	}
	related := testenv.Obj{"AsyncActor.asya.sh/v1alpha1": testenv.Obj{rolloutNS + "/" + name: a}}
	sync := testenv.Obj{"controller": l.cc, "parent": a, "children": testenv.Obj{}, "related": related}
	gone := testenv.DeepCopy(a)
	testenv.MapAt(gone, "metadata")["deletionTimestamp"] = "2026-01-01T00:01:00Z"
	finalize := testenv.Obj{"controller": l.cc, "parent": gone, "children": testenv.Obj{}, "related": testenv.Obj{"AsyncActor.asya.sh/v1alpha1": testenv.Obj{rolloutNS + "/" + name: gone}}, "finalizing": true}
	out := map[string][]byte{}
	for h, req := range map[string]testenv.Obj{"customize": {"controller": l.cc, "parent": a}, "sync": sync, "finalize": finalize} {
		out[h], _ = json.Marshal(req)
	}
	return out
}

// call makes one hook call; it fails unless the answer is 200 with a JSON
// object. It returns the protocol the answer came over.
func (l *loadHooks) call(ctx context.Context, c *http.Client, hook string, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.urls[hook], bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", l.authorization)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.Proto, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.Proto, fmt.Errorf("HTTP %d: %s", resp.StatusCode, testenv.FirstLine(data))
	}
	var answer map[string]any
	if err := json.Unmarshal(data, &answer); err != nil {
		return resp.Proto, fmt.Errorf("undecodable answer: %w", err)
	}
	return resp.Proto, nil
}

// releaseQueues finalizes the load's actors without Retain: their queues
// go.
func (l *loadHooks) releaseQueues(t *testing.T, ctx context.Context) {
	for i := 0; i < loadActors; i++ {
		if _, err := l.call(ctx, l.h2["finalize"], "finalize", l.requests(i, false)["finalize"]); err != nil {
			t.Errorf("finalize hookload-%d: %v", i, err)
		}
	}
}

// hookLoad calls the hooks for each actor without pause, customize, sync,
// finalize and again, until finished. A failed call is tried again after
// Metacontroller's per-actor backoff (5 ms, doubling).
type hookLoad struct {
	start  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	calls    int
	protos   map[string]int
	failures []callFailure
	// recovered: for each run of failures of an actor, from its first
	// failure to its next success; open: runs not over yet.
	recovered []time.Duration
	open      map[int]time.Time
	marked    time.Time
	markWhat  string
}

type callFailure struct {
	at          time.Time
	actor       int
	hook, proto string
	err         string
}

func (l *loadHooks) start(t *testing.T, ctx context.Context) *hookLoad {
	ctx, cancel := context.WithCancel(ctx)
	load := &hookLoad{start: time.Now(), cancel: cancel, protos: map[string]int{}, open: map[int]time.Time{}}
	// A test that stops early stops its load too.
	t.Cleanup(func() { cancel(); load.wg.Wait() })
	for i := 0; i < loadActors; i++ {
		// The last actor's calls go over HTTP/1.1.
		clients, proto := l.h2, "HTTP/2"
		if i == loadActors-1 {
			clients, proto = l.h1, "HTTP/1.1"
		}
		reqs := l.requests(i, true)
		load.wg.Add(1)
		go func() {
			defer load.wg.Done()
			backoff := 5 * time.Millisecond
			for ctx.Err() == nil {
				for _, h := range hookNames {
					got, err := l.call(ctx, clients[h], h, reqs[h])
					if ctx.Err() != nil {
						return
					}
					load.record(i, h, proto, got, err)
					if err != nil {
						time.Sleep(backoff)
						backoff *= 2
						break
					}
					backoff = 5 * time.Millisecond
				}
			}
		}()
	}
	// Every client connected and calling before the disruption.
	time.Sleep(2 * time.Second)
	return load
}

func (h *hookLoad) record(actor int, hook, want, got string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	now := time.Now()
	if err != nil {
		h.failures = append(h.failures, callFailure{at: now, actor: actor, hook: hook, proto: want, err: err.Error()})
		if _, ok := h.open[actor]; !ok {
			h.open[actor] = now
		}
		return
	}
	h.protos[got]++
	if since, ok := h.open[actor]; ok {
		h.recovered = append(h.recovered, now.Sub(since))
		delete(h.open, actor)
	}
}

// mark notes the moment of the disruption, from which failures are timed;
// unmarked, from the start of the load.
func (h *hookLoad) mark(what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.marked, h.markWhat = time.Now(), what
}

// finish lets the load run a little longer, stops it and returns its
// figures as a line: calls, failures, when they came and how long each
// actor took to get a call through again. With zero, any failure fails
// the test; always, every actor must be through again.
func (h *hookLoad) finish(t *testing.T, what string, zero bool, note string) string {
	t.Helper()
	time.Sleep(2 * time.Second)
	h.cancel()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	elapsed := time.Since(h.start)
	from, fromWhat := h.start, "the start"
	if !h.marked.IsZero() {
		from, fromWhat = h.marked, h.markWhat
	}
	line := fmt.Sprintf("| %s | %d | %.0f s | %d |", what, h.calls, elapsed.Seconds(), len(h.failures))
	if n := len(h.failures); n > 0 {
		first, last := h.failures[0].at.Sub(from), h.failures[n-1].at.Sub(from)
		sort.Slice(h.recovered, func(i, j int) bool { return h.recovered[i] < h.recovered[j] })
		worst := time.Duration(0)
		if len(h.recovered) > 0 {
			worst = h.recovered[len(h.recovered)-1]
		}
		line += fmt.Sprintf(" %.2f–%.2f s after %s; every actor through again within %.2f s;%s |", first.Seconds(), last.Seconds(), fromWhat, worst.Seconds(), note)
		var b strings.Builder
		for _, f := range h.failures {
			fmt.Fprintf(&b, "\n  %+.3fs actor %d %s %s: %s", f.at.Sub(from).Seconds(), f.actor, f.hook, f.proto, f.err)
		}
		if zero {
			t.Errorf("%s: %d of %d hook calls failed:%s", what, n, h.calls, b.String())
		} else {
			t.Logf("%s: %d of %d hook calls failed:%s", what, n, h.calls, b.String())
		}
	} else {
		line += note + " |"
	}
	for actor, since := range h.open {
		t.Errorf("%s: actor %d's calls still failing %s after its first failure", what, actor, time.Since(since).Round(time.Millisecond))
	}
	for _, p := range []string{"HTTP/2.0", "HTTP/1.1"} {
		if h.protos[p] == 0 {
			t.Errorf("%s: no call answered over %s (%v)", what, p, h.protos)
		}
	}
	t.Log(line)
	return line
}
