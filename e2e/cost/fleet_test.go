//go:build e2e

package cost

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// The fleet measurement: many actors created at once, then deleted at once,
// with the driver run the way Metacontroller runs a CompositeController:
// informers (a list, then a watch, per resource) feed a cache the driver
// reads from and a work queue of parents; five workers (Metacontroller's
// --workers default) take parents off the queue; every API request goes
// through one token bucket (client-go's QPS and Burst, 100 and 200 here, as
// Metacontroller was run for issue 14); the customize answer is kept per
// parent generation; a child whose update would change nothing is left
// alone; the webhook etag cache is used as the CompositeController says.
// The children that finalize answers keep are removed by the cluster's
// garbage collector (kube-controller-manager, its own client and rate
// limit); the delete phase reports when the last one went.
//
// It runs only when asked: ASYA_FLEET=1 go test -tags e2e ./e2e/cost -run Fleet
// (see docs/performance.md).
//
//	ASYA_FLEET_ACTORS   actors per run (default 200)
//	ASYA_FLEET_ROUNDS   rounds of the three runs, interleaved (default 1)

const (
	fleetQPS     = 100
	fleetBurst   = 200
	fleetWorkers = 5
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func TestFleet(t *testing.T) {
	if os.Getenv("ASYA_FLEET") != "1" {
		t.Skip("the fleet measurement runs only when asked: ASYA_FLEET=1 (docs/performance.md, \"Fleet: 200 actors\")")
	}
	if !env.Rabbit {
		t.Skip("RabbitMQ not listening on 127.0.0.1:5672")
	}
	actors, rounds := envInt("ASYA_FLEET_ACTORS", 200), envInt("ASYA_FLEET_ROUNDS", 1)
	ctx := testenv.CtxFor(t, time.Duration(rounds)*30*time.Minute)
	// The measurement is asya-sync's and Metacontroller's: KEDA's operator
	// would act on the fleet's 200 ScaledObjects (finalizers, status, HPAs,
	// scaling to zero), each act another sync. It is paused meanwhile; its
	// admission webhooks keep answering.
	if env.KEDA != nil {
		env.KEDA.Pause(t)
	}

	noop := httptest.NewServer(http.HandlerFunc(noopHook))
	defer noop.Close()
	noEtag := testenv.DeepCopy(env.CC)
	for _, h := range []string{"customize", "sync", "finalize"} {
		testenv.MapAt(noEtag, "spec", "hooks", h, "webhook")["etag"] = testenv.Obj{"enabled": false}
	}
	runs := []struct {
		name     string
		cc       testenv.Obj
		answered func(string, testenv.Obj, *testenv.HookResponse)
	}{
		{"no-op hook", testenv.AtBaseURL(env.CC, noop.URL), nil},
		{"asya-sync, etag on", env.CC, nil},
		{"asya-sync, etag off", noEtag, nil},
	}
	var rows, cpuRows []string
	for round := 1; round <= rounds; round++ {
		for i, r := range runs {
			id := fmt.Sprintf("r%d-%d-%s", round, i, env.RunID)
			res, err := runFleet(t, ctx, r.cc, r.answered, id, actors)
			if err != nil {
				t.Fatalf("%s, round %d: %v", r.name, round, err)
			}
			for _, ph := range res {
				rows = append(rows, ph.row(r.name, round, actors))
				t.Log(rows[len(rows)-1])
				if ph.cpu != nil {
					cpuRows = append(cpuRows, ph.cpu.row(r.name, round))
				}
			}
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%d actors, %d workers, QPS %d burst %d, GOMAXPROCS %d, load average %s\n%s\n%s\n\nCPU while deleting, from the first delete to the last actor gone:\n%s\n%s",
		actors, fleetWorkers, fleetQPS, fleetBurst, runtime.GOMAXPROCS(0), strings.Join(strings.Fields(string(load))[:3], " "),
		fleetHeader, strings.Join(rows, "\n"), cpuHeader, strings.Join(cpuRows, "\n"))
}

// noopHook answers every hook doing nothing: no related objects, no
// children, the parent's status unchanged, finalized at once.
var noopHook = floorHook(nil, nil)

// floorHook answers every hook with no related objects, the parent's
// status unchanged, finalized at once, and the children child(name,
// namespace) gives for the parent (as JSON objects), also on finalize, so
// that the garbage collector removes them as it does asya-sync's. queue,
// unless nil, does the parent's queue work for the hook (its path) before
// the answer; its error fails the call.
func floorHook(child func(name, namespace string) []byte, queue func(hook, name, namespace string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Parent struct {
				Metadata struct{ Name, Namespace string } `json:"metadata"`
				Status   json.RawMessage                  `json:"status"`
			} `json:"parent"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if queue != nil {
			if err := queue(r.URL.Path, req.Parent.Metadata.Name, req.Parent.Metadata.Namespace); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		status := req.Parent.Status
		if len(status) == 0 {
			status = json.RawMessage("null")
		}
		var children []byte
		if child != nil {
			children = child(req.Parent.Metadata.Name, req.Parent.Metadata.Namespace)
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/customize":
			fmt.Fprint(w, `{"relatedResources":[]}`)
		case "/sync":
			fmt.Fprintf(w, `{"status":%s,"children":[%s]}`, status, children)
		case "/finalize":
			fmt.Fprintf(w, `{"status":%s,"children":[%s],"finalized":true}`, status, children)
		default:
			http.NotFound(w, r)
		}
	}
}

// phase is what one phase of a run cost.
type phase struct {
	name     string
	wall     time.Duration
	requests map[string]int // by verb and answer code
	hooks    map[string]testenv.HookStats
	// collected is, for delete, from the first delete to the last child
	// removed by garbage collection; zero when there was none.
	collected time.Duration
	// cpu is, for delete, the CPU time each part of the run spent from the
	// first delete to the last actor gone.
	cpu *cpuUse
}

const fleetHeader = "| hook | round | phase | wall | children gone | customize / actor | sync / actor | finalize / actor | hook time / actor | status writes | API requests | by verb | not 2xx | 304 answers | bytes not sent |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"

func (p phase) row(hook string, round, actors int) string {
	per := func(h string) string { return fmt.Sprintf("%.2f", float64(p.hooks[h].Calls)/float64(actors)) }
	total, verbs := 0, []string{}
	for _, v := range []string{"GET", "LIST", "WATCH", "POST", "PATCH", "PUT", "DELETE"} {
		if n := p.requests[v]; n > 0 {
			total += n
			verbs = append(verbs, fmt.Sprintf("%s %d", v, n))
		}
	}
	notModified, saved, hookTime := 0, 0, time.Duration(0)
	for _, h := range p.hooks {
		notModified += h.NotModified
		saved += h.BytesSaved
		hookTime += h.Time
	}
	name := p.name
	var failed []string
	for v, n := range p.requests {
		if strings.Contains(v, " ") && n > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d", v, n))
		}
	}
	sort.Strings(failed)
	// Status is written with PUT only; a PUT that failed wrote nothing.
	writes := p.requests["PUT"] - p.requests["PUT 404"] - p.requests["PUT 409"]
	gone := ""
	if p.name == "delete" {
		gone = "none to collect"
	}
	if p.collected > 0 {
		gone = fmt.Sprintf("%.1f s", p.collected.Seconds())
	}
	return fmt.Sprintf("| %s | %d | %s | %.1f s | %s | %s | %s | %s | %.1f ms | %d | %d | %s | %s | %d | %.1f MB |",
		hook, round, name, p.wall.Seconds(), gone, per("customize"), per("sync"), per("finalize"),
		float64(hookTime.Microseconds())/1e3/float64(actors),
		writes, total, strings.Join(verbs, ", "), strings.Join(failed, ", "), notModified, float64(saved)/1e6)
}

// runFleet creates n actors at once in a namespace of their own, waits
// until the driver has settled them, deletes them at once and waits until
// they are gone.
func runFleet(t *testing.T, ctx context.Context, cc testenv.Obj, answered func(string, testenv.Obj, *testenv.HookResponse), id string, n int) ([]phase, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ns := "fleet-" + id
	testenv.EnsureNamespace(t, ctx, ns, true)

	base := env.Cluster.Client
	tr := base.HTTP.Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	k := &testenv.Kube{Base: base.Base, Token: base.Token, HTTP: &http.Client{Timeout: 30 * time.Second, Transport: tr},
		Resources: map[string][]testenv.APIResource{}, Limiter: rate.NewLimiter(fleetQPS, fleetBurst), Counts: map[string]int{}}
	d, err := testenv.NewDriver(ctx, k, cc)
	if err != nil {
		return nil, err
	}
	q := newWorkQueue()
	defer q.shutdown()
	c := &watchCache{k: k, informers: map[string]*informer{}}
	fc := &fleetController{d: d, q: q, failures: map[string]int{}}
	c.onEvent = fc.onEvent
	d.Read, d.SkipUnchanged, d.Answered = c, true, answered
	d.CustomizeCache = &testenv.CustomizeCache{Answers: map[string]testenv.CustomizeEntry{}}
	// Metacontroller's informers for the parent and the children start
	// with it; those of related resources start on first use.
	for _, r := range append([]testenv.GVR{d.Parent}, d.Kids...) {
		if _, err := c.informer(ctx, r); err != nil {
			return nil, err
		}
	}
	for i := 0; i < fleetWorkers; i++ {
		go fc.work(ctx)
	}

	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("f%s-%03d", id, i)
	}
	var out []phase
	measure := func(name string, act func() (time.Time, error)) error {
		reqs0, hooks0 := k.Snapshot(), d.HookStats()
		start := time.Now()
		end, err := act()
		if err != nil {
			return fmt.Errorf("%s: %w (last hook error: %v)", name, err, fc.lastError())
		}
		reqs1, hooks1 := k.Snapshot(), d.HookStats()
		p := phase{name: name, wall: end.Sub(start), requests: map[string]int{}, hooks: map[string]testenv.HookStats{}}
		for v, x := range reqs1 {
			p.requests[v] = x - reqs0[v]
		}
		for h, s := range hooks1 {
			b := hooks0[h]
			p.hooks[h] = testenv.HookStats{Calls: s.Calls - b.Calls, NotModified: s.NotModified - b.NotModified,
				BytesSaved: s.BytesSaved - b.BytesSaved, BytesIn: s.BytesIn - b.BytesIn, Time: s.Time - b.Time}
		}
		out = append(out, p)
		return nil
	}

	err = measure("create", func() (time.Time, error) {
		if err := parallel(names, func(name string) error {
			a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
			testenv.MapAt(a, "metadata")["name"] = name
			testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
			testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"enabled": true}
			_, err := base.Create(ctx, a, false)
			return err
		}); err != nil {
			return time.Time{}, err
		}
		// Settled: every actor's status written for its generation, and
		// the queue idle for two seconds; the phase ends at the last write.
		err := waitUntil(ctx, 10*time.Minute, func() bool {
			settled := 0
			for _, a := range c.items(d.Parent, ns) {
				if g := testenv.Field(a, "metadata", "generation"); g != nil && fmt.Sprint(testenv.Field(a, "status", "observedGeneration")) == fmt.Sprint(g) {
					settled++
				}
			}
			return settled == n && q.idleFor() > 2*time.Second
		})
		return k.LastWriteTime(), err
	})
	if err != nil {
		return out, err
	}

	var deleteStart time.Time
	var cpu0, cpu1 *cpuUse
	err = measure("delete", func() (time.Time, error) {
		fc.mu.Lock()
		fc.gone, fc.kidGone = time.Time{}, time.Time{}
		fc.mu.Unlock()
		deleteStart, cpu0 = time.Now(), readCPU()
		if err := parallel(names, func(name string) error { return base.Delete(ctx, testenv.ActorGVR(), ns, name) }); err != nil {
			return time.Time{}, err
		}
		err := waitUntil(ctx, 10*time.Minute, func() bool {
			if len(c.items(d.Parent, ns)) > 0 {
				return false
			}
			if cpu1 == nil {
				cpu1 = readCPU()
			}
			return q.idleFor() > time.Second
		})
		fc.mu.Lock()
		defer fc.mu.Unlock()
		return fc.gone, err
	})
	if err != nil {
		return out, err
	}
	// Garbage collection removes the children the finalize answers kept,
	// on its own client and rate limit; the driver's watches see them go.
	childrenLeft := func() int {
		n := 0
		for _, r := range d.Kids {
			n += len(c.items(r, ns))
		}
		return n
	}
	if err := waitUntil(ctx, 10*time.Minute, func() bool { return childrenLeft() == 0 }); err != nil {
		return out, fmt.Errorf("garbage collection: %d children left: %w", childrenLeft(), err)
	}
	out[len(out)-1].cpu = cpu1.since(cpu0)
	fc.mu.Lock()
	if !fc.kidGone.IsZero() {
		out[len(out)-1].collected = fc.kidGone.Sub(deleteStart)
	}
	fc.mu.Unlock()
	return out, nil
}

// parallel runs f on every name from 16 goroutines: a client creating or
// deleting many objects at once.
func parallel(names []string, f func(string) error) error {
	work := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if err := f(n); err != nil {
					errs <- fmt.Errorf("%s: %w", n, err)
				}
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

func waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return testenv.WaitUntilEvery(ctx, timeout, 20*time.Millisecond, cond)
}

// fleetController feeds the driver from the watches, as Metacontroller's
// parent controller does: an event of a parent queues it, an event of a
// child queues its controller; a failed sync is retried with a growing
// delay, and resyncAfterSeconds queues the parent again after that long.
type fleetController struct {
	d *testenv.Driver
	q *workQueue

	mu       sync.Mutex
	failures map[string]int
	lastErr  error
	gone     time.Time // the latest disappearance of a parent
	kidGone  time.Time // the latest disappearance of a child
}

func (fc *fleetController) onEvent(r testenv.GVR, typ string, old, cur testenv.Obj) {
	if r.Resource == fc.d.Parent.Resource && r.APIVersion == fc.d.Parent.APIVersion {
		if typ == "DELETED" {
			fc.mu.Lock()
			fc.gone = time.Now()
			fc.mu.Unlock()
		}
		fc.q.add(testenv.Str(cur, "metadata", "namespace") + "/" + testenv.Str(cur, "metadata", "name"))
		return
	}
	if typ == "DELETED" {
		fc.mu.Lock()
		fc.kidGone = time.Now()
		fc.mu.Unlock()
	}
	for _, o := range []testenv.Obj{old, cur} {
		refs, _ := testenv.Field(o, "metadata", "ownerReferences").([]any)
		for _, ref := range refs {
			ref := ref.(testenv.Obj)
			if c, _ := ref["controller"].(bool); c && testenv.Str(ref, "kind") == fc.d.Parent.Kind && testenv.Str(ref, "apiVersion") == fc.d.Parent.APIVersion {
				fc.q.add(testenv.Str(o, "metadata", "namespace") + "/" + testenv.Str(ref, "name"))
			}
		}
	}
}

func (fc *fleetController) work(ctx context.Context) {
	for {
		key, ok := fc.q.get()
		if !ok {
			return
		}
		ns, name, _ := strings.Cut(key, "/")
		p, err := fc.d.Reconcile(ctx, ns, name)
		fc.mu.Lock()
		if err != nil && ctx.Err() == nil {
			fc.failures[key]++
			fc.lastErr = fmt.Errorf("%s: %w", key, err)
			delay := 5 * time.Millisecond << min(fc.failures[key], 12)
			fc.mu.Unlock()
			fc.q.addAfter(key, delay)
		} else {
			delete(fc.failures, key)
			fc.mu.Unlock()
			if err == nil && !p.Gone && p.Response.ResyncAfterSeconds > 0 {
				fc.q.addAfter(key, time.Duration(p.Response.ResyncAfterSeconds*float64(time.Second)))
			}
		}
		fc.q.done(key)
	}
}

func (fc *fleetController) lastError() error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.lastErr
}

// workQueue is client-go's work queue in little: a key queued while it
// waits is queued once; a key queued while a worker has it is queued again
// when the worker is done, so no two workers sync one parent at once.
type workQueue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	queue      []string
	dirty      map[string]bool
	processing map[string]bool
	closed     bool
	busySince  time.Time // zero when idle
	idleSince  time.Time
}

func newWorkQueue() *workQueue {
	q := &workQueue{dirty: map[string]bool{}, processing: map[string]bool{}, idleSince: time.Now()}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *workQueue) add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.dirty[key] {
		return
	}
	q.dirty[key] = true
	if q.processing[key] {
		return
	}
	q.queue = append(q.queue, key)
	q.idleSince = time.Time{}
	q.cond.Signal()
}

func (q *workQueue) addAfter(key string, d time.Duration) {
	time.AfterFunc(d, func() { q.add(key) })
}

func (q *workQueue) get() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return "", false
	}
	key := q.queue[0]
	q.queue = q.queue[1:]
	q.processing[key] = true
	delete(q.dirty, key)
	return key, true
}

func (q *workQueue) done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.dirty[key] {
		q.queue = append(q.queue, key)
		q.cond.Signal()
	}
	if len(q.queue) == 0 && len(q.processing) == 0 {
		q.idleSince = time.Now()
	}
}

// idleFor is how long nothing has been queued or synced.
func (q *workQueue) idleFor() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.idleSince.IsZero() {
		return 0
	}
	return time.Since(q.idleSince)
}

func (q *workQueue) shutdown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// watchCache holds, per resource, every object as a list and then a watch
// in every namespace report it, as an informer does; it reads like the API
// server (reader) and reports every change to onEvent.
type watchCache struct {
	k       *testenv.Kube
	onEvent func(r testenv.GVR, typ string, old, cur testenv.Obj)

	mu        sync.Mutex
	informers map[string]*informer
}

type informer struct {
	r     testenv.GVR
	mu    sync.RWMutex
	items map[string]testenv.Obj // by namespace/name
}

func (c *watchCache) informer(ctx context.Context, r testenv.GVR) (*informer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := r.APIVersion + "/" + r.Resource
	if inf := c.informers[key]; inf != nil {
		return inf, nil
	}
	inf := &informer{r: r}
	rv, err := inf.relist(ctx, c.k)
	if err != nil {
		return nil, err
	}
	c.informers[key] = inf
	go inf.run(ctx, c, rv)
	return inf, nil
}

func (inf *informer) relist(ctx context.Context, k *testenv.Kube) (string, error) {
	out, err := k.Do(ctx, "GET", inf.r.Path("", ""), nil, "")
	if err != nil {
		return "", fmt.Errorf("list %s: %w", inf.r.Resource, err)
	}
	items := map[string]testenv.Obj{}
	list, _ := out["items"].([]any)
	for _, it := range list {
		o := it.(testenv.Obj)
		o["apiVersion"], o["kind"] = inf.r.APIVersion, inf.r.Kind
		items[testenv.Str(o, "metadata", "namespace")+"/"+testenv.Str(o, "metadata", "name")] = o
	}
	inf.mu.Lock()
	inf.items = items
	inf.mu.Unlock()
	return testenv.Str(out, "metadata", "resourceVersion"), nil
}

func (inf *informer) run(ctx context.Context, c *watchCache, rv string) {
	for ctx.Err() == nil {
		body, err := c.k.Watch(ctx, inf.r, rv)
		if err != nil {
			if testenv.IsStatus(err, 410) {
				if rv, err = inf.relist(ctx, c.k); err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			} else {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		rv = inf.consume(body, c, rv)
		body.Close()
	}
}

// consume applies a watch stream's events until it ends; it returns the
// resourceVersion to watch from next ("" to start over with a list).
func (inf *informer) consume(body io.Reader, c *watchCache, rv string) string {
	dec := json.NewDecoder(body)
	for {
		var ev struct {
			Type   string      `json:"type"`
			Object testenv.Obj `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			return rv
		}
		o := ev.Object
		switch ev.Type {
		case "BOOKMARK":
			rv = testenv.Str(o, "metadata", "resourceVersion")
			continue
		case "ERROR":
			// Expired: list again, then watch from the list.
			return ""
		}
		rv = testenv.Str(o, "metadata", "resourceVersion")
		o["apiVersion"], o["kind"] = inf.r.APIVersion, inf.r.Kind
		key := testenv.Str(o, "metadata", "namespace") + "/" + testenv.Str(o, "metadata", "name")
		inf.mu.Lock()
		old := inf.items[key]
		if ev.Type == "DELETED" {
			delete(inf.items, key)
		} else {
			inf.items[key] = o
		}
		inf.mu.Unlock()
		if c.onEvent != nil {
			c.onEvent(inf.r, ev.Type, old, o)
		}
	}
}

func (c *watchCache) Get(ctx context.Context, r testenv.GVR, ns, name string) (testenv.Obj, error) {
	inf, err := c.informer(ctx, r)
	if err != nil {
		return nil, err
	}
	inf.mu.RLock()
	o := inf.items[ns+"/"+name]
	inf.mu.RUnlock()
	if o == nil {
		return nil, &testenv.APIError{Code: 404, Reason: "NotFound", Message: fmt.Sprintf("%s %s/%s not in the cache", r.Resource, ns, name)}
	}
	return k8sruntime.DeepCopyJSONValue(o).(testenv.Obj), nil
}

func (c *watchCache) List(ctx context.Context, r testenv.GVR, ns, labelSelector string) ([]testenv.Obj, error) {
	inf, err := c.informer(ctx, r)
	if err != nil {
		return nil, err
	}
	want := map[string]string{}
	if labelSelector != "" {
		for _, term := range strings.Split(labelSelector, ",") {
			k, v, ok := strings.Cut(term, "=")
			if !ok {
				return nil, fmt.Errorf("selector %q: only k=v terms", labelSelector)
			}
			want[k] = v
		}
	}
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	var keys []string
	for key, o := range inf.items {
		if ns != "" && testenv.Str(o, "metadata", "namespace") != ns {
			continue
		}
		match := true
		for k, v := range want {
			if testenv.Str(o, "metadata", "labels", k) != v {
				match = false
			}
		}
		if match {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	// A lister's objects are shared, not copied: the driver lists every
	// child of a namespace on every sync, as Metacontroller's claim does,
	// and a deep copy of each would cost the driver more than the hooks.
	// Only the top level is copied (the driver sets apiVersion and kind).
	out := make([]testenv.Obj, 0, len(keys))
	for _, key := range keys {
		o := make(testenv.Obj, len(inf.items[key]))
		for k, v := range inf.items[key] {
			o[k] = v
		}
		out = append(out, o)
	}
	return out, nil
}

// items is what the cache holds of r in ns, uncopied: read only.
func (c *watchCache) items(r testenv.GVR, ns string) []testenv.Obj {
	c.mu.Lock()
	inf := c.informers[r.APIVersion+"/"+r.Resource]
	c.mu.Unlock()
	if inf == nil {
		return nil
	}
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	var out []testenv.Obj
	for _, o := range inf.items {
		if testenv.Str(o, "metadata", "namespace") == ns {
			out = append(out, o)
		}
	}
	return out
}
