//go:build e2e

package cost

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
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
// The floors are "no-op" (no children), "one-child" (one small
// Deployment per actor) and "same-children" (the ConfigMap and Deployment
// asya-sync renders for the actor, and a durable queue per actor on
// RabbitMQ, deleted by its finalize); "lean" is examples/values-large-fleet.yaml.
// ASYA_MC_POD_EVENTS, ASYA_MC_CONFIGMAPS and ASYA_MC_SECRETS (0 by default)
// add the unrelated objects; ASYA_MC_CLAIMANT_LISTS times that many of a
// finalize's claimant lists once the fleet is created; ASYA_MC_BASE_BIN
// and ASYA_MC_BASE_CHART name another build of asya-sync and its chart for
// the variant "base" (the code before a change).
func TestMetacontrollerCost(t *testing.T) {
	bin := testenv.NeedMetacontroller(t)
	if env.KEDA != nil {
		env.KEDA.Pause(t) // KEDA would act on the actors; the measurement is Metacontroller's
	}
	var rows []string
	for _, n := range envInts("ASYA_MC_ACTORS", "200") {
		for _, name := range strings.Split(envOr("ASYA_MC_VARIANTS", "no-op,one-child,default,lean"), ",") {
			v := mcVariantNamed(t, name)
			ctx := testenv.CtxFor(t, 60*time.Minute)
			row, err := measure(t, ctx, v, bin, n)
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

const mcHeader = "| variant | actors | create: wall, Metacontroller CPU, syncs per actor | API server CPU while creating | RSS, live heap after create | claimant list: latency, API server CPU | pod events: count, CPU, per event | ConfigMaps: count, live heap added, per ConfigMap | Secrets: count, live heap added, per Secret | delete: wall, Metacontroller CPU | API server CPU while deleting | RabbitMQ, hook CPU while deleting | finalize: mean latency, of it the queue's delete | peak RSS |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"

func mcVariantNamed(t *testing.T, name string) testenv.MCVariant {
	current := testenv.MCService{Bin: env.SyncBin, Chart: filepath.Join(env.Root, "chart")}
	v := testenv.MCVariant{Name: name, Hook: &current}
	base, noEtag := strings.CutSuffix(name, "+no-etag")
	current.NoEtag = noEtag
	switch base {
	case "no-op":
		return testenv.MCVariant{Name: name, Floor: noopHook}
	case "one-child":
		return testenv.MCVariant{Name: name, Floor: oneChildHook}
	case "same-children":
		return testenv.MCVariant{Name: name, Floor: floorHook(renderedChildren(t), floorQueue(t))}
	case "base":
		v.Hook = &testenv.MCService{Bin: os.Getenv("ASYA_MC_BASE_BIN"), Chart: os.Getenv("ASYA_MC_BASE_CHART")}
	case "default":
	case "watched": // the defaults before pods, Secrets and namesakes were read
		current.Extra = "watch: {pods: true, secrets: true, namesakes: true}\n"
	case "lean": // examples/values-large-fleet.yaml
		current.Extra = "watch: {pods: whileUnhealthy, secrets: read, namesakes: read}\nruntimeDelivery: initContainer\nruntimeImage: asya-sync:test\n"
	case "lean-podtemplate":
		current.Extra = "watch: {pods: false, secrets: false, namesakes: false}\nruntimeDelivery: podTemplate\n"
	default:
		t.Fatalf("unknown variant %q (no-op, one-child, same-children, base, default, watched, lean, lean-podtemplate; asya-sync's with +no-etag)", name)
	}
	return v
}

// costActor is the actor every variant is measured with: scaling off,
// on the rabbitmq transport of MCConfig.
func costActor(t *testing.T, ns, name string) testenv.Obj {
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	testenv.MapAt(a, "metadata")["name"] = name
	testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
	return a
}

// renderedChildren gives a parent the children asya-sync renders for the
// harness's actor under MCConfig (a ConfigMap with the runtime script, a
// Deployment with the sidecar), renamed for it: the floor of any
// CompositeController that has Metacontroller hold those children, with
// no related rule or status of its own.
func renderedChildren(t *testing.T) func(name, namespace string) []byte {
	dir := t.TempDir()
	files := map[string]string{"actor.yaml": testenv.MustJSON(costActor(t, "floorns", "floorname")), "config.yaml": testenv.MCConfig}
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(env.SyncBin, "render", "-f", filepath.Join(dir, "actor.yaml"), "--config", filepath.Join(dir, "config.yaml")).Output()
	if err != nil {
		t.Fatalf("asya-sync render: %v", err)
	}
	objs, err := testenv.SplitYAML(out, "asya-sync render")
	if err != nil {
		t.Fatal(err)
	}
	kids := make([]string, len(objs))
	for i, o := range objs {
		kids[i] = testenv.MustJSON(o)
	}
	joined := strings.Join(kids, ",")
	return func(name, namespace string) []byte {
		return []byte(strings.NewReplacer("floorname", name, "floorns", namespace).Replace(joined))
	}
}

// floorQueue gives a floor a durable queue per parent on the transport's
// RabbitMQ, declared on the parent's first sync and deleted by its
// finalize, as any CompositeController with a queue per parent must: the
// floor of asya-sync's queue work, against which its own (a queue and a
// dead-letter queue, the claimants read first) is measured. Channels are
// kept between calls, as asya-sync keeps them.
func floorQueue(t *testing.T) func(hook, name, namespace string) error {
	conn := testenv.Rabbit(t)
	channels := make(chan *amqp.Channel, 16)
	var declared gosync.Map
	onChannel := func(f func(ch *amqp.Channel) error) error {
		var ch *amqp.Channel
		select {
		case ch = <-channels:
		default:
			var err error
			if ch, err = conn.Channel(); err != nil {
				return err
			}
		}
		if err := f(ch); err != nil {
			ch.Close()
			return err
		}
		select {
		case channels <- ch:
		default:
			ch.Close()
		}
		return nil
	}
	return func(hook, name, namespace string) error {
		queue := "floor-" + namespace + "-" + name
		switch _, seen := declared.Load(queue); {
		case hook == "/sync" && !seen:
			err := onChannel(func(ch *amqp.Channel) error {
				_, err := ch.QueueDeclare(queue, true, false, false, false, nil)
				return err
			})
			if err == nil {
				declared.Store(queue, true)
			}
			return err
		case hook == "/finalize":
			declared.Delete(queue)
			return onChannel(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(queue, false, false, false); return err })
		}
		return nil
	}
}

// oneChildHook is the floor of any CompositeController with a workload:
// the no-op's, except that each parent has one small Deployment.
var oneChildHook = floorHook(func(name, namespace string) []byte {
	labels := testenv.Obj{"app": name}
	child, _ := json.Marshal(testenv.Obj{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": testenv.Obj{"name": name, "namespace": namespace},
		"spec": testenv.Obj{"replicas": 0, "selector": testenv.Obj{"matchLabels": labels},
			"template": testenv.Obj{"metadata": testenv.Obj{"labels": labels},
				"spec": testenv.Obj{"containers": []any{testenv.Obj{"name": "c", "image": "registry.invalid/none:1"}}}}}})
	return child
}, nil)

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

// measure measures one variant at n actors with a fresh Metacontroller.
func measure(t *testing.T, ctx context.Context, v testenv.MCVariant, bin string, n int) (string, error) {
	alnum := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return -1
	}, v.Name)
	id := fmt.Sprintf("%s-%d-%s", alnum, n, env.RunID)
	var hookURL string
	// syncs counts the sync calls; finalizing sums the finalize calls'
	// latency, and deleting the broker's queue deletes within them, in
	// seconds.
	var syncs, finalizing, deleting func() float64
	// calls counts the calls of one hook ("finalize").
	var calls func(hook string) float64
	// hookCPU is the hook process's CPU time; a floor runs in this one,
	// whose CPU is not told apart (NaN).
	hookCPU := func() float64 { return math.NaN() }
	if v.Hook != nil {
		hookURL = testenv.StartExtraService(t, "cost-"+id, v.Hook.Bin, testenv.MCConfig+v.Hook.Extra, nil)
		syncs = func() float64 {
			return testenv.ScrapeSum(hookURL+"/metrics", `asya_sync_hook_calls_total{code="200",hook="sync"`)
		}
		finalizing = func() float64 {
			return testenv.ScrapeSum(hookURL+"/metrics", `asya_sync_hook_duration_seconds_sum{hook="finalize"}`)
		}
		deleting = func() float64 {
			return testenv.ScrapeSum(hookURL+"/metrics", `asya_sync_transport_operation_duration_seconds_sum{operation="delete"`)
		}
		hookCPU = func() float64 { return testenv.ScrapeSum(hookURL+"/metrics", "process_cpu_seconds_total") }
		calls = func(hook string) float64 {
			return testenv.ScrapeSum(hookURL+"/metrics", `asya_sync_hook_duration_seconds_count{hook="`+hook+`"}`)
		}
	} else {
		var called gosync.Map // by path, *atomic.Int64
		var finalizeNanos atomic.Int64
		floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			v.Floor(w, r)
			if r.URL.Path == "/finalize" {
				finalizeNanos.Add(int64(time.Since(start)))
			}
			count, _ := called.LoadOrStore(r.URL.Path, new(atomic.Int64))
			count.(*atomic.Int64).Add(1)
		}))
		defer floor.Close()
		hookURL = floor.URL
		calls = func(hook string) float64 {
			if count, ok := called.Load("/" + hook); ok {
				return float64(count.(*atomic.Int64).Load())
			}
			return 0
		}
		syncs = func() float64 { return calls("sync") }
		finalizing = func() float64 { return time.Duration(finalizeNanos.Load()).Seconds() }
		deleting = finalizing // the floor's finalize is its queue's delete
	}
	k := env.Cluster.Client
	ccName := "cost-" + id
	cc := v.CompositeController(t, ccName, hookURL)
	ccGVR, err := k.ByKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		return "", err
	}
	if _, err := k.Apply(ctx, cc, "e2e"); err != nil {
		return "", fmt.Errorf("CompositeController: %w", err)
	}
	defer k.Delete(context.Background(), ccGVR, "", ccName)

	mc, err := testenv.MCStart(t, bin, id)
	if err != nil {
		return "", err
	}
	defer mc.Stop(10 * time.Second)
	if err := mc.Idle(ctx, 3*time.Second); err != nil {
		return "", err
	}

	ns := "cost-" + id
	testenv.EnsureNamespace(t, ctx, ns, true)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("a%05d", i)
	}
	row := fmt.Sprintf("| %s | %d |", v.Name, n)

	// Create: every actor has a status for its generation, then
	// Metacontroller goes idle.
	cpu0, api0, syncs0, start := mc.CPU(), env.APIServerCPU(), syncs(), time.Now()
	if err := parallel(names, func(name string) error {
		_, err := k.Create(ctx, costActor(t, ns, name), false)
		return err
	}); err != nil {
		return "", err
	}
	settled, err := mcSettled(ctx, ns, n)
	if err != nil {
		return "", fmt.Errorf("create: %w\n%s", err, mc.Tail(20))
	}
	if err := mc.Idle(ctx, 3*time.Second); err != nil {
		return "", err
	}
	row += fmt.Sprintf(" %.1f s, %.1f s, %.1f | %.1f s | %s, %s |", settled.Sub(start).Seconds(), mc.CPU()-cpu0,
		(syncs()-syncs0)/float64(n), env.APIServerCPU()-api0, mb(mc.Mem("VmRSS")), mb(mc.LiveHeap()))

	// The claimant list a finalize makes (watch.namesakes read), at this
	// fleet size: its latency and the API server's CPU, per list.
	if v.Hook != nil && envInt("ASYA_MC_CLAIMANT_LISTS", 0) > 0 {
		list, get, err := claimantLists(ctx, ns, names, envInt("ASYA_MC_CLAIMANT_LISTS", 0))
		if err != nil {
			return "", err
		}
		row += fmt.Sprintf(" %.1f ms, %.2f ms (a GET of one actor: %.1f ms, %.2f ms) |", list.latency*1e3, list.cpu*1e3, get.latency*1e3, get.cpu*1e3)
	} else {
		row += " |"
	}
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
	// Unrelated ConfigMaps and Secrets: memory added per object of 1 KB.
	for _, u := range []struct{ kind, env string }{{"ConfigMap", "ASYA_MC_CONFIGMAPS"}, {"Secret", "ASYA_MC_SECRETS"}} {
		c := envInt(u.env, 0)
		if c == 0 {
			row += " |"
			continue
		}
		added, err := mcUnrelated(t, ctx, mc, "cost-"+strings.ToLower(u.kind)+"s-"+id, u.kind, c)
		if err != nil {
			return "", err
		}
		row += fmt.Sprintf(" %d, %s, %.1f KB |", c, mb(added), float64(added)/float64(c)/1024)
	}

	// Delete: every actor gone.
	cpu0, api0, start = mc.CPU(), env.APIServerCPU(), time.Now()
	finalizing0, deleting0, hook0 := finalizing(), deleting(), hookCPU()
	rabbitCPU, local := testenv.RabbitCPU()
	if !local {
		rabbitCPU = func() float64 { return math.NaN() } // a broker elsewhere
	}
	rabbit0, requests0 := rabbitCPU(), mc.Requests()
	hooks := []string{"customize", "sync", "finalize"}
	calls0 := make([]float64, len(hooks))
	for i, h := range hooks {
		calls0[i] = calls(h)
	}
	if err := parallel(names, func(name string) error { return k.Delete(ctx, testenv.ActorGVR(), ns, name) }); err != nil {
		return "", err
	}
	gone, err := testenv.MCGone(ctx, ns)
	if err != nil {
		return "", fmt.Errorf("delete: %w\n%s", err, mc.Tail(20))
	}
	if err := mc.Idle(ctx, 3*time.Second); err != nil {
		return "", err
	}
	row += fmt.Sprintf(" %.1f s, %.1f s | %.1f s | %.1f s, %.1f s | %.1f ms, %.1f ms | %s |", gone.Sub(start).Seconds(), mc.CPU()-cpu0,
		env.APIServerCPU()-api0, rabbitCPU()-rabbit0, hookCPU()-hook0,
		(finalizing()-finalizing0)/float64(n)*1e3, (deleting()-deleting0)/float64(n)*1e3, mb(mc.Mem("VmHWM")))
	var requests []string
	for request, count := range mc.Requests() {
		if d := count - requests0[request]; d > 0 {
			requests = append(requests, fmt.Sprintf("%s: %.2f", request, d/float64(n)))
		}
	}
	sort.Strings(requests)
	t.Logf("%s: Metacontroller's requests per actor while deleting: %s", v.Name, strings.Join(requests, ", "))
	perActor := make([]string, len(hooks))
	for i, h := range hooks {
		perActor[i] = fmt.Sprintf("%s %.2f", h, (calls(h)-calls0[i])/float64(n))
	}
	t.Logf("%s: hook calls per actor while deleting: %s", v.Name, strings.Join(perActor, ", "))
	// The children the garbage collector would remove at its own pace:
	// removed at once, so that the next Metacontroller does not list them.
	mcDeleteAll(ctx, ns, "apps/v1", "Deployment")
	mcDeleteAll(ctx, ns, "v1", "ConfigMap")
	return row, nil
}

// timing is the mean latency and API server CPU of a request, in seconds.
type timing struct{ latency, cpu float64 }

// claimantLists makes count lists of a nested actor's namesakes, as a
// finalize makes them (every namespace, metadata.name, from the watch
// cache), one after another, then as many GETs of one actor, the same
// request without the scan.
func claimantLists(ctx context.Context, ns string, names []string, count int) (list, get timing, err error) {
	timed := func(path func(name string) string) (timing, error) {
		cpu0, start := env.APIServerCPU(), time.Now()
		for i := range count {
			p := path(names[i%len(names)])
			if _, code, err := env.Cluster.Client.Raw(ctx, "GET", p, nil, ""); err != nil || code != http.StatusOK {
				return timing{}, fmt.Errorf("GET %s: %d %v", p, code, err)
			}
		}
		return timing{time.Since(start).Seconds() / float64(count), (env.APIServerCPU() - cpu0) / float64(count)}, nil
	}
	if list, err = timed(func(name string) string {
		return testenv.ActorGVR().Path("", "") + "?resourceVersion=0&fieldSelector=metadata.name%3D" + name
	}); err != nil {
		return
	}
	get, err = timed(func(name string) string { return testenv.ActorGVR().Path(ns, name) + "?resourceVersion=0" })
	return
}

// mcSettled waits until all n actors of ns have a status for their
// generation and returns when the last one got it.
func mcSettled(ctx context.Context, ns string, n int) (time.Time, error) {
	last := time.Now()
	err := testenv.WaitUntilEvery(ctx, 30*time.Minute, time.Second, func() bool {
		actors, err := env.Cluster.Client.List(ctx, testenv.ActorGVR(), ns, "")
		if err != nil {
			return false
		}
		settled := 0
		for _, a := range actors {
			if g := testenv.Field(a, "metadata", "generation"); g != nil && fmt.Sprint(testenv.Field(a, "status", "observedGeneration")) == fmt.Sprint(g) {
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

// mcPodEvents creates p pods in ns, relabels each twice and deletes them,
// and returns the events and Metacontroller's CPU time for them.
func mcPodEvents(t *testing.T, ctx context.Context, mc *testenv.MCProcess, ns string, p int) (int, float64, error) {
	testenv.EnsureNamespace(t, ctx, ns, false)
	k := env.Cluster.Client
	podGVR, err := k.ByKind(ctx, "v1", "Pod")
	if err != nil {
		return 0, 0, err
	}
	// The service account admission wants the namespace's default account.
	sa := testenv.Obj{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": testenv.Obj{"name": "default", "namespace": ns}}
	if _, err := k.Apply(ctx, sa, "e2e"); err != nil {
		return 0, 0, err
	}
	names := make([]string, p)
	for i := range names {
		names[i] = fmt.Sprintf("p%05d", i)
	}
	cpu0 := mc.CPU()
	steps := []func(string) error{
		func(name string) error {
			_, err := k.Create(ctx, testenv.Obj{"apiVersion": "v1", "kind": "Pod",
				"metadata": testenv.Obj{"name": name, "namespace": ns, "labels": testenv.Obj{"app": "unrelated", "round": "0"}},
				"spec": testenv.Obj{"automountServiceAccountToken": false,
					"containers": []any{testenv.Obj{"name": "c", "image": "registry.invalid/none:1"}}}}, false)
			return err
		},
		func(name string) error { return mcLabel(ctx, podGVR, ns, name, "1") },
		func(name string) error { return mcLabel(ctx, podGVR, ns, name, "2") },
		func(name string) error {
			_, _, err := k.Raw(ctx, "DELETE", podGVR.Path(ns, name), []byte(`{"gracePeriodSeconds":0}`), "application/json")
			return err
		},
	}
	for _, step := range steps {
		if err := parallel(names, step); err != nil {
			return 0, 0, err
		}
	}
	if err := mc.Idle(ctx, 3*time.Second); err != nil {
		return 0, 0, err
	}
	return len(steps) * p, mc.CPU() - cpu0, nil
}

func mcLabel(ctx context.Context, r testenv.GVR, ns, name, round string) error {
	patch := []byte(`{"metadata":{"labels":{"round":"` + round + `"}}}`)
	_, _, err := env.Cluster.Client.Raw(ctx, "PATCH", r.Path(ns, name), patch, "application/merge-patch+json")
	return err
}

// mcUnrelated creates c objects of kind (ConfigMap or Secret) of 1 KB in
// ns and returns the live heap Metacontroller added, then deletes them.
func mcUnrelated(t *testing.T, ctx context.Context, mc *testenv.MCProcess, ns, kind string, c int) (int64, error) {
	testenv.EnsureNamespace(t, ctx, ns, false)
	k := env.Cluster.Client
	names := make([]string, c)
	for i := range names {
		names[i] = fmt.Sprintf("c%05d", i)
	}
	before := mc.LiveHeap()
	field := map[string]string{"ConfigMap": "data", "Secret": "stringData"}[kind]
	data := strings.Repeat("x", 1024)
	if err := parallel(names, func(name string) error {
		_, err := k.Create(ctx, testenv.Obj{"apiVersion": "v1", "kind": kind,
			"metadata": testenv.Obj{"name": name, "namespace": ns}, field: testenv.Obj{"d": data}}, false)
		return err
	}); err != nil {
		return 0, err
	}
	if err := mc.Idle(ctx, 3*time.Second); err != nil {
		return 0, err
	}
	added := mc.LiveHeap() - before
	mcDeleteAll(ctx, ns, "v1", kind)
	return added, mc.Idle(ctx, 3*time.Second)
}

// mcDeleteAll deletes every object of the kind in ns in one request.
func mcDeleteAll(ctx context.Context, ns, apiVersion, kind string) {
	k := env.Cluster.Client
	r, err := k.ByKind(ctx, apiVersion, kind)
	if err != nil {
		return
	}
	k.Raw(ctx, "DELETE", r.Path(ns, ""), []byte(`{"gracePeriodSeconds":0}`), "application/json")
}

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }
