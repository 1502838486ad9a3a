//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMetacontrollerCost measures what a CompositeController costs the real
// Metacontroller (docs/performance.md, "What Metacontroller pays"): its CPU
// time and memory while a fleet of actors is created and deleted, per
// unrelated pod event, and per unrelated ConfigMap, for asya-sync's
// CompositeController in several configurations and for a no-op floor.
// Metacontroller cannot be built in CI (its module path is not served by
// the Go module proxy), so the test runs only when ASYA_METACONTROLLER_BIN
// names a binary built by hand:
//
//	ASYA_METACONTROLLER_BIN=/path/to/metacontroller \
//	ASYA_METACONTROLLER_CRDS=/path/to/metacontroller/manifests/production/metacontroller-crds-v1.yaml \
//	ASYA_MC_ACTORS=200,1000,2000 ASYA_MC_VARIANTS=no-op,one-child,default,lean \
//	  E2E_TEST_FLAGS=-v .ci/e2e.sh test -run MetacontrollerCost -timeout 120m
//
// The floors are "no-op" (no children) and "one-child" (one small
// Deployment per actor); "lean" is examples/values-large-fleet.yaml.
// ASYA_MC_POD_EVENTS and ASYA_MC_CONFIGMAPS (0 by default) add the
// unrelated objects; ASYA_MC_BASE_BIN and ASYA_MC_BASE_CHART name another
// build of asya-sync and its chart for the variant "base" (the code before
// a change).
func TestMetacontrollerCost(t *testing.T) {
	bin := needMetacontroller(t)
	if env.keda != nil {
		env.keda.pause(t) // KEDA would act on the actors; the measurement is Metacontroller's
	}
	var rows []string
	for _, n := range envInts("ASYA_MC_ACTORS", "200") {
		for _, name := range strings.Split(envOr("ASYA_MC_VARIANTS", "no-op,one-child,default,lean"), ",") {
			v := mcVariantNamed(t, name)
			ctx := ctxFor(t, 60*time.Minute)
			row, err := v.run(t, ctx, bin, n)
			if err != nil {
				t.Fatalf("%s, %d actors: %v", name, n, err)
			}
			t.Log(row)
			rows = append(rows, row)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("Metacontroller %s, load average %s\n%s\n%s", bin, strings.Join(strings.Fields(string(load))[:3], " "),
		mcHeader, strings.Join(rows, "\n"))
}

// needMetacontroller returns the Metacontroller binary built by hand
// (ASYA_METACONTROLLER_BIN), after installing its CRDs
// (ASYA_METACONTROLLER_CRDS), and skips the test without it or without
// RabbitMQ. The tier installs only the CompositeController CRD;
// Metacontroller also waits for its DecoratorController and
// ControllerRevision resources, and exits when they never sync.
func needMetacontroller(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ASYA_METACONTROLLER_BIN")
	if bin == "" {
		t.Skip("runs the real Metacontroller: set ASYA_METACONTROLLER_BIN and ASYA_METACONTROLLER_CRDS (docs/testing.md, \"With the real Metacontroller, by hand\")")
	}
	if !env.rabbit {
		t.Skip("RabbitMQ not listening on 127.0.0.1:5672")
	}
	crds, err := readYAMLDocs(os.Getenv("ASYA_METACONTROLLER_CRDS"))
	if err != nil {
		t.Fatalf("ASYA_METACONTROLLER_CRDS: Metacontroller's CRDs (manifests/production/metacontroller-crds-v1.yaml of its repository): %v", err)
	}
	for _, crd := range crds {
		if _, err := env.cluster.client.apply(context.Background(), crd, "e2e"); err != nil {
			t.Fatalf("CRD %s: %v", str(crd, "metadata", "name"), err)
		}
	}
	return bin
}

const mcHeader = "| variant | actors | create: wall, Metacontroller CPU, syncs per actor | RSS, live heap after create | pod events: count, CPU, per event | ConfigMaps: count, live heap added, per ConfigMap | delete: wall, CPU | peak RSS |\n" +
	"|---|---|---|---|---|---|---|---|"

// mcVariant is one CompositeController and the hook behind it: a floor
// (floor, served by the harness) or an asya-sync service (hook).
type mcVariant struct {
	name  string
	floor http.HandlerFunc
	hook  *mcService
}

// mcService is an asya-sync build, its chart, the service configuration
// keys laid over the harness's, and whether the chart turns the etag
// cache off.
type mcService struct {
	bin, chart, extra string
	noEtag            bool
}

func mcVariantNamed(t *testing.T, name string) mcVariant {
	current := mcService{bin: env.syncBin, chart: filepath.Join(env.root, "chart")}
	v := mcVariant{name: name, hook: &current}
	base, noEtag := strings.CutSuffix(name, "+no-etag")
	current.noEtag = noEtag
	switch base {
	case "no-op":
		return mcVariant{name: name, floor: noopHook}
	case "one-child":
		return mcVariant{name: name, floor: oneChildHook}
	case "base":
		v.hook = &mcService{bin: os.Getenv("ASYA_MC_BASE_BIN"), chart: os.Getenv("ASYA_MC_BASE_CHART")}
	case "default":
	case "lean": // examples/values-large-fleet.yaml
		current.extra = "watch: {pods: false, secrets: false, namesakes: false}\nruntimeDelivery: initContainer\nruntimeImage: asya-sync:test\n"
	case "lean-podtemplate":
		current.extra = "watch: {pods: false, secrets: false, namesakes: false}\nruntimeDelivery: podTemplate\n"
	default:
		t.Fatalf("unknown variant %q (no-op, one-child, base, default, lean, lean-podtemplate; asya-sync's with +no-etag)", name)
	}
	return v
}

// mcTarget labels the CompositeControllers this Metacontroller runs: the
// e2e tier has installed others, which it must leave alone.
const mcTarget = "asya.sh/cost-measurement"

// compositeController is the floor's, or the one the variant's chart
// renders, over plain HTTP to the harness's service (TLS would cost
// both alike).
func (v mcVariant) compositeController(t *testing.T, name, hookURL string) obj {
	if v.hook == nil {
		return mcFloorCC(name, hookURL)
	}
	if v.hook.bin == "" || v.hook.chart == "" {
		t.Fatalf("variant %s needs ASYA_MC_BASE_BIN and ASYA_MC_BASE_CHART", v.name)
	}
	args := slices.Concat([]string{"template", "asya-sync", v.hook.chart, "--namespace", "asya-system"}, brokerUser, []string{
		"--set", "compositeController.name=" + name, "--set", "compositeController.hookURL=" + hookURL,
		"--set", "hooks.tls.enabled=false", "--set", "hooks.auth.token.enabled=false"})
	if v.hook.noEtag {
		args = append(args, "--set", "compositeController.etag=false")
	}
	if v.hook.extra != "" {
		values := filepath.Join(t.TempDir(), "values.yaml")
		indented := "  " + strings.ReplaceAll(strings.TrimSpace(v.hook.extra), "\n", "\n  ")
		if err := os.WriteFile(values, []byte("config:\n"+indented+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", values)
	}
	out, err := env.helm(args...)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := splitYAML([]byte(out), "helm template")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if str(d, "kind") == "CompositeController" {
			meta := mapAt(d, "metadata")
			if meta["labels"] == nil {
				meta["labels"] = obj{}
			}
			mapAt(d, "metadata", "labels")[mcTarget] = "true"
			return d
		}
	}
	t.Fatalf("%s renders no CompositeController", v.hook.chart)
	return nil
}

// mcFloorCC is a floor's CompositeController: Deployments and ConfigMaps
// as children, sync and finalize hooks, no customize hook and no related
// resources.
func mcFloorCC(name, url string) obj {
	hook := func(path string) obj { return obj{"version": "v2", "webhook": obj{"url": url + path}} }
	return obj{"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
		"metadata": obj{"name": name, "labels": obj{mcTarget: "true"}},
		"spec": obj{
			"parentResource":   obj{"apiVersion": "asya.sh/v1alpha1", "resource": "asyncactors"},
			"generateSelector": true,
			"childResources": []any{
				obj{"apiVersion": "apps/v1", "resource": "deployments"},
				obj{"apiVersion": "v1", "resource": "configmaps"},
			},
			"hooks": obj{"sync": hook("/sync"), "finalize": hook("/finalize")},
		}}
}

// oneChildHook is the floor of any CompositeController with a workload:
// the no-op's, except that each parent has one small Deployment.
var oneChildHook = floorHook(func(name, namespace string) []byte {
	labels := obj{"app": name}
	child, _ := json.Marshal(obj{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": obj{"name": name, "namespace": namespace},
		"spec": obj{"replicas": 0, "selector": obj{"matchLabels": labels},
			"template": obj{"metadata": obj{"labels": labels},
				"spec": obj{"containers": []any{obj{"name": "c", "image": "registry.invalid/none:1"}}}}}})
	return child
})

// mcConfig is the service configuration of the harness: one RabbitMQ
// transport whose sidecars read a password Secret, so that customize asks
// for it by default.
const mcConfig = `sidecarImage: asya-sidecar:test
transports:
  rabbitmq:
    type: rabbitmq
    config:
      host: 127.0.0.1
      username: guest
      passwordSecretRef: {name: rabbitmq-secret, key: password}
      exchange: asya
`

// run measures one variant at n actors with a fresh Metacontroller.
func (v mcVariant) run(t *testing.T, ctx context.Context, bin string, n int) (string, error) {
	alnum := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return -1
	}, v.name)
	id := fmt.Sprintf("%s-%d-%s", alnum, n, env.runID)
	var hookURL string
	var syncs func() float64
	if v.hook != nil {
		hookURL = startExtraService(t, "cost-"+id, v.hook.bin, mcConfig+v.hook.extra, nil)
		syncs = func() float64 {
			return scrapeSum(hookURL+"/metrics", `asya_sync_hook_calls_total{code="200",hook="sync"`)
		}
	} else {
		var calls atomic.Int64
		floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/sync" {
				calls.Add(1)
			}
			v.floor(w, r)
		}))
		defer floor.Close()
		hookURL = floor.URL
		syncs = func() float64 { return float64(calls.Load()) }
	}
	k := env.cluster.client
	ccName := "cost-" + id
	cc := v.compositeController(t, ccName, hookURL)
	ccGVR, err := k.byKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		return "", err
	}
	if _, err := k.apply(ctx, cc, "e2e"); err != nil {
		return "", fmt.Errorf("CompositeController: %w", err)
	}
	defer k.delete(context.Background(), ccGVR, "", ccName)

	mc, err := mcStart(t, bin, id)
	if err != nil {
		return "", err
	}
	defer mc.stop(10 * time.Second)
	if err := mc.idle(ctx, 3*time.Second); err != nil {
		return "", err
	}

	ns := "cost-" + id
	ensureNamespace(t, ctx, ns, true)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("a%05d", i)
	}
	row := fmt.Sprintf("| %s | %d |", v.name, n)

	// Create: every actor has a status for its generation, then
	// Metacontroller goes idle.
	cpu0, syncs0, start := mc.cpu(), syncs(), time.Now()
	if err := parallel(names, func(name string) error {
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), ns)
		mapAt(a, "metadata")["name"] = name
		mapAt(a, "spec")["transport"] = "rabbitmq"
		_, err := k.create(ctx, a, false)
		return err
	}); err != nil {
		return "", err
	}
	settled, err := mcSettled(ctx, ns, n)
	if err != nil {
		return "", fmt.Errorf("create: %w\n%s", err, mc.tail(20))
	}
	if err := mc.idle(ctx, 3*time.Second); err != nil {
		return "", err
	}
	row += fmt.Sprintf(" %.1f s, %.1f s, %.1f | %s, %s |", settled.Sub(start).Seconds(), mc.cpu()-cpu0,
		(syncs()-syncs0)/float64(n), mb(mc.mem("VmRSS")), mb(mc.liveHeap()))

	// Unrelated pod events: pods in a namespace with no actor, each
	// created, relabelled twice and deleted (nothing schedules them).
	if p := envInt("ASYA_MC_POD_EVENTS", 0); p > 0 {
		events, cpu, err := mcPodEvents(t, ctx, mc, "cost-pods-"+id, p)
		if err != nil {
			return "", err
		}
		row += fmt.Sprintf(" %d, %.2f s, %.0f µs |", events, cpu, cpu/float64(events)*1e6)
	} else {
		row += " |"
	}
	// Unrelated ConfigMaps: memory added per ConfigMap of 1 KB.
	if c := envInt("ASYA_MC_CONFIGMAPS", 0); c > 0 {
		added, err := mcConfigMaps(t, ctx, mc, "cost-cms-"+id, c)
		if err != nil {
			return "", err
		}
		row += fmt.Sprintf(" %d, %s, %.1f KB |", c, mb(added), float64(added)/float64(c)/1024)
	} else {
		row += " |"
	}

	// Delete: every actor gone.
	cpu0, start = mc.cpu(), time.Now()
	if err := parallel(names, func(name string) error { return k.delete(ctx, actorGVR(), ns, name) }); err != nil {
		return "", err
	}
	gone, err := mcGone(ctx, ns)
	if err != nil {
		return "", fmt.Errorf("delete: %w\n%s", err, mc.tail(20))
	}
	if err := mc.idle(ctx, 3*time.Second); err != nil {
		return "", err
	}
	row += fmt.Sprintf(" %.1f s, %.1f s | %s |", gone.Sub(start).Seconds(), mc.cpu()-cpu0, mb(mc.mem("VmHWM")))
	// The children the garbage collector would remove at its own pace:
	// removed at once, so that the next Metacontroller does not list them.
	mcDeleteAll(ctx, ns, "apps/v1", "Deployment")
	mcDeleteAll(ctx, ns, "v1", "ConfigMap")
	return row, nil
}

// scrapeSum adds up the Prometheus samples at url whose series starts
// with prefix.
func scrapeSum(url, prefix string) float64 {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sum := 0.0
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			sum += v
		}
	}
	return sum
}

// mcProcess is a running Metacontroller and its metrics and pprof
// addresses.
type mcProcess struct {
	*process
	metrics, pprof string
}

// liveHeap is the heap Metacontroller's objects hold: collected first, so
// that garbage the runtime has not yet reclaimed does not count.
func (m *mcProcess) liveHeap() int64 {
	if resp, err := http.Get("http://" + m.pprof + "/debug/pprof/heap?gc=1"); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return int64(scrapeSum("http://"+m.metrics+"/metrics", "go_memstats_heap_alloc_bytes "))
}

// mcStart runs Metacontroller with the run's apply strategy
// (ASYA_E2E_APPLY_STRATEGY).
// metacontrollerFor starts the real Metacontroller for one test, under a
// CompositeController named prefix-<run>; the controller is deleted and
// Metacontroller stopped when the test ends. It returns the name and the
// process (for its log).
func metacontrollerFor(t *testing.T, ctx context.Context, prefix string) (string, *mcProcess) {
	t.Helper()
	bin := needMetacontroller(t)
	ccGVR, err := env.cluster.client.byKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		t.Fatal(err)
	}
	id := prefix + "-" + env.runID
	mc, err := mcStart(t, bin, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.cluster.client.delete(context.Background(), ccGVR, "", id)
		mc.stop(10 * time.Second)
	})
	return id, mc
}

// mcServe starts this build of asya-sync as the service named service,
// configured with mcConfig plus extra (and extraEnv), and points the
// CompositeController id at it from the chart, as a helm upgrade changes
// both together.
func mcServe(t *testing.T, ctx context.Context, id, service, extra string, extraEnv []string) {
	t.Helper()
	v := mcVariant{name: service, hook: &mcService{bin: env.syncBin, chart: filepath.Join(env.root, "chart"), extra: extra}}
	url := startExtraService(t, service, env.syncBin, mcConfig+extra, extraEnv)
	if _, err := env.cluster.client.apply(ctx, v.compositeController(t, id, url), "e2e"); err != nil {
		t.Fatal(err)
	}
}

// mcDelete deletes the actor and waits until Metacontroller has finalized
// it. Tests defer it: it must run while their services still answer and
// before Metacontroller stops, which the test's cleanups do.
func mcDelete(t *testing.T, ns, name string) {
	env.cluster.client.delete(context.Background(), actorGVR(), ns, name)
	if _, err := mcGone(context.Background(), ns); err != nil {
		t.Errorf("the actor was not finalized: %v", err)
	}
}

func mcStart(t *testing.T, bin, id string) (*mcProcess, error) {
	strategy, err := strategyFromEnv()
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	p, err := startProcess("metacontroller-"+id, env.work, []string{"KUBECONFIG=" + env.cluster.kubeconfig}, bin,
		"--client-go-qps=100", "--client-go-burst=200", "--apply-strategy="+string(strategy),
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--pprof-address=127.0.0.1:%d", ports[2]),
		"--target-label-selector="+mcTarget+"=true")
	if err != nil {
		return nil, err
	}
	t.Logf("Metacontroller %s: pprof on 127.0.0.1:%d", id, ports[2])
	if err := waitFor("metacontroller", time.Minute, p, httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]))); err != nil {
		p.stop(5 * time.Second)
		return nil, err
	}
	return &mcProcess{p, fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[2])}, nil
}

// cpu is the process's user and system time so far, in seconds.
func (m *mcProcess) cpu() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command (in parentheses): utime and stime are the
	// 12th and 13th, in clock ticks (100 a second on Linux).
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100
}

// mem is a memory figure of /proc/<pid>/status, in bytes.
func (m *mcProcess) mem(key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// idle waits until the process has used less than 2 % of a core for the
// window: its queues are drained.
func (m *mcProcess) idle(ctx context.Context, window time.Duration) error {
	deadline := time.Now().Add(30 * time.Minute)
	for last := m.cpu(); ; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(window):
		}
		now := m.cpu()
		if now-last < 0.02*window.Seconds() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Metacontroller still busy after 30 minutes")
		}
		last = now
	}
}

// mcSettled waits until all n actors of ns have a status for their
// generation and returns when the last one got it.
func mcSettled(ctx context.Context, ns string, n int) (time.Time, error) {
	last := time.Now()
	err := waitUntilEvery(ctx, 30*time.Minute, time.Second, func() bool {
		actors, err := env.cluster.client.list(ctx, actorGVR(), ns, "")
		if err != nil {
			return false
		}
		settled := 0
		for _, a := range actors {
			if g := field(a, "metadata", "generation"); g != nil && fmt.Sprint(field(a, "status", "observedGeneration")) == fmt.Sprint(g) {
				settled++
			}
		}
		if settled < n {
			last = time.Now()
		}
		return settled == n
	})
	return last, err
}

// mcGone waits until ns has no actor left.
func mcGone(ctx context.Context, ns string) (time.Time, error) {
	last := time.Now()
	err := waitUntilEvery(ctx, 30*time.Minute, 500*time.Millisecond, func() bool {
		actors, err := env.cluster.client.list(ctx, actorGVR(), ns, "")
		if err != nil || len(actors) > 0 {
			last = time.Now()
			return false
		}
		return true
	})
	return last, err
}

// mcPodEvents creates p pods in ns, relabels each twice and deletes them,
// and returns the events and Metacontroller's CPU time for them.
func mcPodEvents(t *testing.T, ctx context.Context, mc *mcProcess, ns string, p int) (int, float64, error) {
	ensureNamespace(t, ctx, ns, false)
	k := env.cluster.client
	podGVR, err := k.byKind(ctx, "v1", "Pod")
	if err != nil {
		return 0, 0, err
	}
	// The service account admission wants the namespace's default account.
	sa := obj{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": obj{"name": "default", "namespace": ns}}
	if _, err := k.apply(ctx, sa, "e2e"); err != nil {
		return 0, 0, err
	}
	names := make([]string, p)
	for i := range names {
		names[i] = fmt.Sprintf("p%05d", i)
	}
	cpu0 := mc.cpu()
	steps := []func(string) error{
		func(name string) error {
			_, err := k.create(ctx, obj{"apiVersion": "v1", "kind": "Pod",
				"metadata": obj{"name": name, "namespace": ns, "labels": obj{"app": "unrelated", "round": "0"}},
				"spec": obj{"automountServiceAccountToken": false,
					"containers": []any{obj{"name": "c", "image": "registry.invalid/none:1"}}}}, false)
			return err
		},
		func(name string) error { return mcLabel(ctx, podGVR, ns, name, "1") },
		func(name string) error { return mcLabel(ctx, podGVR, ns, name, "2") },
		func(name string) error {
			_, _, err := k.raw(ctx, "DELETE", podGVR.path(ns, name), []byte(`{"gracePeriodSeconds":0}`), "application/json")
			return err
		},
	}
	for _, step := range steps {
		if err := parallel(names, step); err != nil {
			return 0, 0, err
		}
	}
	if err := mc.idle(ctx, 3*time.Second); err != nil {
		return 0, 0, err
	}
	return len(steps) * p, mc.cpu() - cpu0, nil
}

func mcLabel(ctx context.Context, r gvr, ns, name, round string) error {
	patch := []byte(`{"metadata":{"labels":{"round":"` + round + `"}}}`)
	_, _, err := env.cluster.client.raw(ctx, "PATCH", r.path(ns, name), patch, "application/merge-patch+json")
	return err
}

// mcConfigMaps creates c ConfigMaps of 1 KB in ns and returns the live
// heap Metacontroller added, then deletes them.
func mcConfigMaps(t *testing.T, ctx context.Context, mc *mcProcess, ns string, c int) (int64, error) {
	ensureNamespace(t, ctx, ns, false)
	k := env.cluster.client
	names := make([]string, c)
	for i := range names {
		names[i] = fmt.Sprintf("c%05d", i)
	}
	before := mc.liveHeap()
	data := strings.Repeat("x", 1024)
	if err := parallel(names, func(name string) error {
		_, err := k.create(ctx, obj{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": obj{"name": name, "namespace": ns}, "data": obj{"d": data}}, false)
		return err
	}); err != nil {
		return 0, err
	}
	if err := mc.idle(ctx, 3*time.Second); err != nil {
		return 0, err
	}
	added := mc.liveHeap() - before
	mcDeleteAll(ctx, ns, "v1", "ConfigMap")
	return added, mc.idle(ctx, 3*time.Second)
}

// mcDeleteAll deletes every object of the kind in ns in one request.
func mcDeleteAll(ctx context.Context, ns, apiVersion, kind string) {
	k := env.cluster.client
	r, err := k.byKind(ctx, apiVersion, kind)
	if err != nil {
		return
	}
	k.raw(ctx, "DELETE", r.path(ns, ""), []byte(`{"gracePeriodSeconds":0}`), "application/json")
}

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInts(name, def string) []int {
	var out []int
	for _, s := range strings.Split(envOr(name, def), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			out = append(out, n)
		}
	}
	return out
}
