//go:build e2e

package testenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NeedMetacontroller returns the Metacontroller binary built by hand
// (ASYA_METACONTROLLER_BIN), after installing its CRDs
// (ASYA_METACONTROLLER_CRDS), and skips the test without it or without
// RabbitMQ. The tier installs only the CompositeController CRD;
// Metacontroller also waits for its DecoratorController and
// ControllerRevision resources, and exits when they never sync.
func NeedMetacontroller(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ASYA_METACONTROLLER_BIN")
	if bin == "" {
		t.Skip("runs the real Metacontroller: set ASYA_METACONTROLLER_BIN and ASYA_METACONTROLLER_CRDS (docs/testing.md, \"With the real Metacontroller, by hand\")")
	}
	if !env.Rabbit {
		t.Skip("RabbitMQ not listening on 127.0.0.1:5672")
	}
	crds, err := ReadYAMLDocs(os.Getenv("ASYA_METACONTROLLER_CRDS"))
	if err != nil {
		t.Fatalf("ASYA_METACONTROLLER_CRDS: Metacontroller's CRDs (manifests/production/metacontroller-crds-v1.yaml of its repository): %v", err)
	}
	for _, crd := range crds {
		if _, err := env.Cluster.Client.Apply(context.Background(), crd, "e2e"); err != nil {
			t.Fatalf("CRD %s: %v", Str(crd, "metadata", "name"), err)
		}
	}
	return bin
}

// MCVariant is one CompositeController and the hook behind it: a floor
// (floor, served by the harness) or an asya-sync service (hook).
type MCVariant struct {
	Name  string
	Floor http.HandlerFunc
	Hook  *MCService
}

// MCService is an asya-sync build, its chart, the service configuration
// keys laid over the harness's, and whether the chart turns the etag
// cache off.
type MCService struct {
	Bin, Chart, Extra string
	NoEtag            bool
}

// mcTarget labels the CompositeControllers this Metacontroller runs: the
// e2e tier has installed others, which it must leave alone.
const mcTarget = "asya.sh/cost-measurement"

// CompositeController is the floor's, or the one the variant's chart
// renders, over plain HTTP to the harness's service (TLS would cost
// both alike).
func (v MCVariant) CompositeController(t *testing.T, name, hookURL string) Obj {
	if v.Hook == nil {
		return mcFloorCC(name, hookURL)
	}
	if v.Hook.Bin == "" || v.Hook.Chart == "" {
		t.Fatalf("variant %s needs ASYA_MC_BASE_BIN and ASYA_MC_BASE_CHART", v.Name)
	}
	args := slices.Concat([]string{"template", "asya-sync", v.Hook.Chart, "--namespace", "asya-system"}, BrokerUser, []string{
		"--set", "compositeController.name=" + name, "--set", "compositeController.hookURL=" + hookURL,
		"--set", "hooks.tls.enabled=false", "--set", "hooks.auth.token.enabled=false"})
	if v.Hook.NoEtag {
		args = append(args, "--set", "compositeController.etag=false")
	}
	if v.Hook.Extra != "" {
		values := filepath.Join(t.TempDir(), "values.yaml")
		indented := "  " + strings.ReplaceAll(strings.TrimSpace(v.Hook.Extra), "\n", "\n  ")
		if err := os.WriteFile(values, []byte("config:\n"+indented+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", values)
	}
	out, err := env.Helm(args...)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := SplitYAML([]byte(out), "helm template")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if Str(d, "kind") == "CompositeController" {
			meta := MapAt(d, "metadata")
			if meta["labels"] == nil {
				meta["labels"] = Obj{}
			}
			MapAt(d, "metadata", "labels")[mcTarget] = "true"
			return d
		}
	}
	t.Fatalf("%s renders no CompositeController", v.Hook.Chart)
	return nil
}

// mcFloorCC is a floor's CompositeController: Deployments and ConfigMaps
// as children, sync and finalize hooks, no customize hook and no related
// resources.
func mcFloorCC(name, url string) Obj {
	hook := func(path string) Obj { return Obj{"version": "v2", "webhook": Obj{"url": url + path}} }
	return Obj{"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
		"metadata": Obj{"name": name, "labels": Obj{mcTarget: "true"}},
		"spec": Obj{
			"parentResource":   Obj{"apiVersion": "asya.sh/v1alpha1", "resource": "asyncactors"},
			"generateSelector": true,
			"childResources": []any{
				Obj{"apiVersion": "apps/v1", "resource": "deployments"},
				Obj{"apiVersion": "v1", "resource": "configmaps"},
			},
			"hooks": Obj{"sync": hook("/sync"), "finalize": hook("/finalize")},
		}}
}

// MCConfig is the service configuration of the harness: one RabbitMQ
// transport whose sidecars read a password Secret, so that customize asks
// for it by default.
const MCConfig = `sidecarImage: asya-sidecar:test
transports:
  rabbitmq:
    type: rabbitmq
    config:
      host: 127.0.0.1
      username: guest
      passwordSecretRef: {name: rabbitmq-secret, key: password}
      exchange: asya
`

// ScrapeSum adds up the Prometheus samples at url whose series starts
// with prefix.
func ScrapeSum(url, prefix string) float64 {
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

// MCProcess is a running Metacontroller and its metrics and pprof
// addresses.
type MCProcess struct {
	*Process
	metrics, pprof string
}

// Requests is how many requests Metacontroller's clients have made to
// the API server so far, by method and answer code ("PUT 404").
func (m *MCProcess) Requests() map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get("http://" + m.metrics + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		if s := restRequests.FindStringSubmatch(sc.Text()); s != nil {
			v, _ := strconv.ParseFloat(s[3], 64)
			out[s[2]+" "+s[1]] += v
		}
	}
	return out
}

// restRequests is client-go's request counter: its labels code, host and
// method, in that order, and its value.
var restRequests = regexp.MustCompile(`^rest_client_requests_total\{code="([^"]*)",host="[^"]*",method="([^"]*)"\} (\S+)$`)

// LiveHeap is the heap Metacontroller's objects hold: collected first, so
// that garbage the runtime has not yet reclaimed does not count.
func (m *MCProcess) LiveHeap() int64 {
	if resp, err := http.Get("http://" + m.pprof + "/debug/pprof/heap?gc=1"); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return int64(ScrapeSum("http://"+m.metrics+"/metrics", "go_memstats_heap_alloc_bytes "))
}

// MetacontrollerFor starts the real Metacontroller for one test, under a
// CompositeController named prefix-<run>; the controller is deleted and
// Metacontroller stopped when the test ends. It returns the name and the
// process (for its log).
func MetacontrollerFor(t *testing.T, ctx context.Context, prefix string) (string, *MCProcess) {
	t.Helper()
	bin := NeedMetacontroller(t)
	ccGVR, err := env.Cluster.Client.ByKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		t.Fatal(err)
	}
	id := prefix + "-" + env.RunID
	mc, err := MCStart(t, bin, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.Cluster.Client.Delete(context.Background(), ccGVR, "", id)
		mc.Stop(10 * time.Second)
	})
	return id, mc
}

// MCServe starts this build of asya-sync as the service named service,
// configured with MCConfig plus extra (and extraEnv), and points the
// CompositeController id at it from the chart, as a helm upgrade changes
// both together.
func MCServe(t *testing.T, ctx context.Context, id, service, extra string, extraEnv []string) {
	t.Helper()
	v := MCVariant{Name: service, Hook: &MCService{Bin: env.SyncBin, Chart: filepath.Join(env.Root, "chart"), Extra: extra}}
	url := StartExtraService(t, service, env.SyncBin, MCConfig+extra, extraEnv)
	if _, err := env.Cluster.Client.Apply(ctx, v.CompositeController(t, id, url), "e2e"); err != nil {
		t.Fatal(err)
	}
}

// MCDelete deletes the actor and waits until Metacontroller has finalized
// it. Tests defer it: it must run while their services still answer and
// before Metacontroller stops, which the test's cleanups do.
func MCDelete(t *testing.T, ns, name string) {
	env.Cluster.Client.Delete(context.Background(), ActorGVR(), ns, name)
	if _, err := MCGone(context.Background(), ns); err != nil {
		t.Errorf("the actor was not finalized: %v", err)
	}
}

// MCStart runs Metacontroller with the run's apply strategy
// (ASYA_E2E_APPLY_STRATEGY).
func MCStart(t *testing.T, bin, id string) (*MCProcess, error) {
	strategy, err := strategyFromEnv()
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	p, err := StartProcess("metacontroller-"+id, env.Work, []string{"KUBECONFIG=" + env.Cluster.Kubeconfig}, bin,
		"--client-go-qps=100", "--client-go-burst=200", "--apply-strategy="+string(strategy),
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--pprof-address=127.0.0.1:%d", ports[2]),
		"--target-label-selector="+mcTarget+"=true")
	if err != nil {
		return nil, err
	}
	t.Logf("Metacontroller %s: pprof on 127.0.0.1:%d", id, ports[2])
	if err := WaitFor("metacontroller", time.Minute, p, HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]))); err != nil {
		p.Stop(5 * time.Second)
		return nil, err
	}
	return &MCProcess{p, fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[2])}, nil
}

// Mem is a memory figure of /proc/<pid>/status, in bytes.
func (m *MCProcess) Mem(key string) int64 {
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

// Idle waits until the process has used less than 2 % of a core for the
// window: its queues are drained.
func (m *MCProcess) Idle(ctx context.Context, window time.Duration) error {
	deadline := time.Now().Add(30 * time.Minute)
	for last := m.CPU(); ; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(window):
		}
		now := m.CPU()
		if now-last < 0.02*window.Seconds() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Metacontroller still busy after 30 minutes")
		}
		last = now
	}
}

// MCGone waits until ns has no actor left. It asks for one actor at a
// time: a full list every half second would cost the API server a decode
// of every actor left, work of the measurement's own that grows with the
// actors' size and is not the fleet's.
func MCGone(ctx context.Context, ns string) (time.Time, error) {
	last := time.Now()
	err := WaitUntilEvery(ctx, 30*time.Minute, 500*time.Millisecond, func() bool {
		page, err := env.Cluster.Client.Do(ctx, "GET", ActorGVR().Path(ns, "")+"?limit=1", nil, "")
		if actors, _ := page["items"].([]any); err != nil || len(actors) > 0 {
			last = time.Now()
			return false
		}
		return true
	})
	return last, err
}
