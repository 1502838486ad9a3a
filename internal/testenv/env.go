//go:build e2e

// The e2e environment: asya-sync against a real kube-apiserver (and etcd)
// with the CRDs of this repository and of KEDA installed, a real RabbitMQ,
// an SQS emulator and a Pub/Sub emulator, and a driver that calls the hooks
// the way Metacontroller does. Run the tiers with `make e2e` (.ci/e2e.sh),
// which builds the tools first.
//
// Environment:
//
//	ASYA_E2E_BIN             directory with kube-apiserver, etcd, kubectl, helm (default .cache/bin)
//	ASYA_E2E_KEDA_CRDS       directory with KEDA's CRDs (default: KEDA v2.21.0 in the module cache)
//	ASYA_E2E_KEDA_BIN        directory with keda-operator and keda-webhooks; without it the
//	                         tests that need KEDA running skip
//	ASYA_E2E_APPLY_STRATEGY  the driver's apply strategy: dynamic-apply (default) or server-side-apply
//	ASYA_E2E_PROMETHEUS_OPERATOR_CRDS
//	                         directory with the Prometheus Operator's CRDs (default: v0.85.0 in the module cache)
//	ASYA_SYNC_BIN            asya-sync binary to test (default: built from this tree)
//	ASYA_SQS_PORT            SQS emulator port (default 9324)
//	ASYA_TEST_PUBSUB_ENDPOINT Pub/Sub emulator host:port (default 127.0.0.1:8085)
//	ASYA_REQUIRE_INTEGRATION 1 turns every missing piece into a failure
//	ASYA_E2E_KEEP            1 keeps the work directory (logs, kubeconfig)
//	ASYA_E2E_NODE            1 brings up the node tier (docs/testing.md): a kubelet, containerd,
//	                         the scheduler and the workload controllers, for the TestNode tests
//	ASYA_E2E_CONTAINERD_BIN  directory with containerd, ctr and containerd-shim-runc-v2
//	ASYA_E2E_NODE_IMAGES     directory with the node tier's image tarballs (.ci/node.sh)
//	ASYA_E2E_DRAIN_DELAY     drainDelaySeconds of TestNodeHookCallsThroughRollouts's release (default:
//	                         the chart's); 0 shows the failed hook calls the delay prevents
//	ASYA_UPSTREAM            a checkout of upstream Asya at a7cec2a; without it TestUpstreamCrewChart skips

package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// env is the environment Run set up; the helpers of this package read it.
var env *Env

// Env is the environment of an e2e tier, set up once per test binary by Run:
// the cluster, the asya-sync service, the driver and, with ASYA_E2E_NODE=1,
// the node.
type Env struct {
	Root    string // repository root
	Bin     string // tool binaries
	Work    string // temp work directory
	Cluster *cluster
	Service *Process
	// metricsURL serves the service's probes and metrics over plain HTTP.
	metricsURL string
	Driver     *Driver
	CC         Obj // the CompositeController of the secure release
	Rabbit     bool
	SQS        bool
	SQSURL     string
	PubSub     bool // the Pub/Sub emulator at testenv.PubSubEndpoint()
	kedaCRD    string
	KEDA       *keda // nil without ASYA_E2E_KEDA_BIN
	Node       *node // nil unless ASYA_E2E_NODE=1
	promCRD    string
	SyncBin    string
	// RunID suffixes SQS actor names: SQS refuses to re-create a queue
	// within 60 s of deleting it, and every run deletes its queues.
	RunID string

	mu      sync.Mutex
	timings []string
}

func required() bool { return os.Getenv("ASYA_REQUIRE_INTEGRATION") == "1" }

// Timed records how long what took, for the timings printed at the end.
func (e *Env) Timed(what string, start time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.timings = append(e.timings, fmt.Sprintf("%-44s %6.2fs", what, time.Since(start).Seconds()))
}

// Run is the TestMain of an e2e tier: it sets the environment up, points
// *tier at it, runs the tests, finalizes what they left and tears the
// environment down. It returns the exit code. When a piece of the
// environment is missing the tests are skipped, or with
// ASYA_REQUIRE_INTEGRATION=1 fail.
func Run(m *testing.M, tier **Env) int {
	e, skip, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		if e != nil {
			e.teardown(true)
		}
		if skip && !required() {
			fmt.Fprintln(os.Stderr, "e2e: skipped (set ASYA_REQUIRE_INTEGRATION=1 to make this a failure)")
			return 0
		}
		return 1
	}
	env, *tier = e, e
	code := m.Run()
	// The cleanup runs here rather than as the last test, so that it sees
	// what every test left, whichever ran and in whatever order.
	if !finalizeLeftovers() {
		code = 1
	}
	if !e.teardown(code != 0) {
		code = 1
	}
	fmt.Println("e2e timings:")
	for _, t := range e.timings {
		fmt.Println("  " + t)
	}
	return code
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(data), "module github.com/asya-sh/asya-sync\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("repository root not found above %s", dir)
		}
		dir = parent
	}
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// setup starts everything. skip reports that what is missing is an
// environment piece (tool, broker) rather than a broken test.
func setup() (e *Env, skip bool, err error) {
	start := time.Now()
	e = &Env{RunID: fmt.Sprintf("%04x", time.Now().UnixNano()&0xffff)}
	if e.Root, err = repoRoot(); err != nil {
		return nil, false, err
	}
	e.Bin = os.Getenv("ASYA_E2E_BIN")
	if e.Bin == "" {
		e.Bin = filepath.Join(e.Root, ".cache", "bin")
	}
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl", "helm"} {
		if _, err := os.Stat(filepath.Join(e.Bin, tool)); err != nil {
			return nil, true, fmt.Errorf("%s missing in %s (run .ci/e2e.sh tools)", tool, e.Bin)
		}
	}
	if e.kedaCRD, err = moduleCRDDir("ASYA_E2E_KEDA_CRDS", "github.com/kedacore/keda/v2@v2.21.0", "config/crd/bases"); err != nil {
		return nil, true, err
	}
	if e.promCRD, err = moduleCRDDir("ASYA_E2E_PROMETHEUS_OPERATOR_CRDS",
		"github.com/prometheus-operator/prometheus-operator@v0.85.0", "example/prometheus-operator-crd"); err != nil {
		return nil, true, err
	}
	e.Rabbit = listening("127.0.0.1:5672")
	e.SQSURL = "http://127.0.0.1:" + SQSPort()
	e.SQS = listening("127.0.0.1:" + SQSPort())
	e.PubSub = listening(PubSubEndpoint())
	if required() && (!e.Rabbit || !e.SQS || !e.PubSub) {
		return nil, true, fmt.Errorf("brokers not listening (RabbitMQ 127.0.0.1:5672 %v, SQS %s %v, Pub/Sub %s %v): run .ci/services.sh",
			e.Rabbit, e.SQSURL, e.SQS, PubSubEndpoint(), e.PubSub)
	}

	if e.Work, err = os.MkdirTemp("", "asya-e2e-"); err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	// Build the service while the API server starts.
	buildErr := make(chan error, 1)
	go func() {
		t := time.Now()
		e.SyncBin = os.Getenv("ASYA_SYNC_BIN")
		if e.SyncBin != "" {
			buildErr <- nil
			return
		}
		e.SyncBin = filepath.Join(e.Work, "asya-sync")
		cmd := exec.Command("go", "build", "-trimpath", "-o", e.SyncBin, "./cmd/asya-sync")
		cmd.Dir = e.Root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("build asya-sync: %v\n%s", err, out)
		}
		e.Timed("build asya-sync", t)
		buildErr <- err
	}()

	t := time.Now()
	if e.Cluster, err = startCluster(ctx, e.Bin, e.Work); err != nil {
		<-buildErr
		return e, false, err
	}
	e.Timed("start etcd + kube-apiserver", t)

	t = time.Now()
	if err := e.installCRDs(ctx); err != nil {
		<-buildErr
		return e, false, err
	}
	e.Timed("install CRDs (asya, KEDA, Metacontroller)", t)

	t = time.Now()
	// The aggregation controller folds ClusterRoles labelled
	// aggregate-to-edit/-view into Kubernetes' default roles.
	controllers := "garbagecollector,clusterrole-aggregation-controller"
	if nodeWanted() {
		controllers = nodeControllers
	}
	if err := e.Cluster.startGC(ctx, e.Bin, controllers); err != nil {
		<-buildErr
		return e, false, err
	}
	e.Timed("start the controller manager ("+controllers+")", t)

	if bin := os.Getenv("ASYA_E2E_KEDA_BIN"); bin != "" {
		t = time.Now()
		if e.KEDA, err = e.startKEDA(ctx, bin); err != nil {
			<-buildErr
			return e, false, err
		}
		e.Timed("start KEDA operator + webhooks", t)
	} else if required() {
		<-buildErr
		return e, true, fmt.Errorf("ASYA_E2E_KEDA_BIN is not set (run .ci/e2e.sh, which builds KEDA)")
	}

	if err := <-buildErr; err != nil {
		return e, false, err
	}
	if nodeWanted() {
		t = time.Now()
		if e.Node, err = e.startNode(ctx); err != nil {
			return e, true, err
		}
		e.Timed("node start (total)", t)
		if e.KEDA != nil {
			t = time.Now()
			if err := e.startKEDAMetrics(ctx); err != nil {
				return e, false, err
			}
			e.Timed("KEDA metrics server, through the aggregation layer", t)
		}
	}
	if nodeWanted() {
		// The node tier's cluster has no asya-sync until a test installs
		// one from the chart, as a new user's cluster has.
		e.Timed("setup total", start)
		return e, false, nil
	}
	t = time.Now()
	if err := e.helmInstall(ctx); err != nil {
		return e, false, err
	}
	e.Timed("helm install + uninstall (docs/install.md)", t)

	t = time.Now()
	if err := e.installController(ctx); err != nil {
		return e, false, err
	}
	e.Timed("apply manifests/", t)

	t = time.Now()
	if err := e.installSecure(ctx); err != nil {
		return e, false, err
	}
	e.Timed("helm install (secure default), start asya-sync serve, set up the driver", t)
	e.Timed("setup total", start)
	return e, false, nil
}

// moduleCRDDir is the directory named by the environment variable, or dir
// in the module version downloaded to the module cache.
func moduleCRDDir(envVar, module, dir string) (string, error) {
	if d := os.Getenv(envVar); d != "" {
		return d, nil
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	d := filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(module), filepath.FromSlash(dir))
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("CRDs not found at %s (go mod download %s)", d, module)
	}
	return d, nil
}

func (e *Env) teardown(failed bool) bool {
	if e.Service != nil {
		e.Service.Stop(10 * time.Second)
	}
	clean := true
	if e.Node != nil {
		if left := e.Node.Stop(); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "e2e: the node tier left behind:\n  "+strings.Join(left, "\n  "))
			clean = false
		}
	}
	if e.KEDA != nil {
		e.KEDA.Stop()
	}
	if e.Cluster != nil {
		e.Cluster.Stop()
	}
	if e.Work == "" {
		return clean
	}
	if failed || !clean || os.Getenv("ASYA_E2E_KEEP") == "1" {
		// The logs are what helps; etcd's data is tens of megabytes.
		os.RemoveAll(filepath.Join(e.Work, "etcd"))
		fmt.Fprintln(os.Stderr, "e2e: work directory kept (logs):", e.Work)
		return clean
	}
	os.RemoveAll(e.Work)
	return clean
}

// installCRDs applies our CRDs (the AsyncActor's and the EnvironmentConfig's), KEDA's, the Prometheus Operator's ServiceMonitor
// and PrometheusRule, and the test copy of Metacontroller's
// CompositeController schema, and waits until they are served.
func (e *Env) installCRDs(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(e.Root, "manifests", "crd", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRD in manifests/crd")
	}
	// The kind flavors are written as, where no Crossplane serves it.
	files = append(files, filepath.Join(e.Root, "manifests", "apiextensions.crossplane.io_environmentconfigs.yaml"))
	keda, _ := filepath.Glob(filepath.Join(e.kedaCRD, "*.yaml"))
	if len(keda) == 0 {
		return fmt.Errorf("no KEDA CRD in %s", e.kedaCRD)
	}
	files = append(files, keda...)
	// Only the Prometheus Operator CRDs the chart uses.
	files = append(files, filepath.Join(e.promCRD, "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(e.promCRD, "monitoring.coreos.com_prometheusrules.yaml"))
	files = append(files, filepath.Join(e.Root, "e2e", "testdata", "metacontroller-crd.yaml"))
	var names []string
	var served []GVR
	for _, f := range files {
		docs, err := ReadYAMLDocs(f)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if Str(d, "kind") != "CustomResourceDefinition" {
				continue
			}
			if _, err := e.Cluster.Client.Apply(ctx, d, "e2e"); err != nil {
				return fmt.Errorf("apply %s: %w", f, err)
			}
			names = append(names, Str(d, "metadata", "name"))
			versions, _ := Field(d, "spec", "versions").([]any)
			for _, v := range versions {
				served = append(served, GVR{
					APIVersion: Str(d, "spec", "group") + "/" + Str(v.(Obj), "name"),
					Resource:   Str(d, "spec", "names", "plural"),
					Namespaced: Str(d, "spec", "scope") == "Namespaced",
				})
			}
		}
	}
	crd := GVR{APIVersion: "apiextensions.k8s.io/v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"}
	for _, n := range names {
		err := WaitFor("CRD "+n, 30*time.Second, e.Cluster.apiserver, func() error {
			o, err := e.Cluster.Client.Get(ctx, crd, "", n)
			if err != nil {
				return err
			}
			conds, _ := Field(o, "status", "conditions").([]any)
			for _, c := range conds {
				if Str(c.(Obj), "type") == "Established" && Str(c.(Obj), "status") == "True" {
					return nil
				}
			}
			return fmt.Errorf("not established")
		})
		if err != nil {
			return err
		}
	}
	// Established is not yet servable: the resource's storage answers 429
	// "(re)initializing" for a moment. Wait until every version lists.
	for _, r := range served {
		err := WaitFor("list "+r.Resource+" "+r.APIVersion, 30*time.Second, e.Cluster.apiserver, func() error {
			_, err := e.Cluster.Client.Do(ctx, "GET", r.Path("", "")+"?limit=1", nil, "")
			return err
		})
		if err != nil {
			return err
		}
	}
	e.Cluster.Client.forget()
	return nil
}

// TestConfig is the service configuration of the run: every transport shape
// the tests exercise, against the local brokers.
func (e *Env) TestConfig() string {
	return fmt.Sprintf(`sidecarImage: asya-sidecar:e2e
gatewayURL: http://asya-gateway.asya-system:8080
queueCacheTTL: 5m
flatActors: {transport: rabbitmq}
transports:
  rabbitmq:
    type: rabbitmq
    enabled: true
    config:
      host: 127.0.0.1
      port: 5672
      username: guest
      passwordSecretRef: {name: rabbitmq-secret, key: password}
      managementURL: http://127.0.0.1:15672
      exchange: asya-e2e
  rabbitmq-guest:
    type: rabbitmq
    enabled: true
    config:
      host: 127.0.0.1
      exchange: asya-e2e
  sqs:
    type: sqs
    enabled: true
    config:
      region: us-east-1
      accountId: "000000000000"
      endpoint: %[1]s
      actorRoleArn: arn:aws:iam::000000000000:role/asya-actors
      tags: {team: e2e}
  sqs-static:
    type: sqs
    enabled: true
    config:
      region: us-east-1
      accountId: "000000000000"
      endpoint: %[1]s
      credentials:
        accessKeyIdSecretRef: {name: aws-creds, key: access-key-id}
        secretAccessKeySecretRef: {name: aws-creds, key: secret-access-key}
  pubsub:
    type: pubsub
    enabled: true
    config:
      projectId: %[2]s
      endpoint: %[3]s
      credentials:
        secretRef: {name: gcp-pubsub, key: credentials.json}
  switched-off:
    type: rabbitmq
    enabled: false
    config:
      host: 127.0.0.1
`, e.SQSURL, PubSubProject, PubSubEndpoint())
}

// startService runs asya-sync serve on hookPort with args (the credential
// flags), its probes and metrics on a plain-HTTP port.
func (e *Env) startService(hookPort int, args ...string) error {
	cfg := filepath.Join(e.Work, "asya-sync.yaml")
	if err := os.WriteFile(cfg, []byte(e.TestConfig()), 0o600); err != nil {
		return err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	e.metricsURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	args = append([]string{"serve", "--config", cfg, "--listen", fmt.Sprintf("127.0.0.1:%d", hookPort),
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--kubeconfig", e.Cluster.Kubeconfig}, args...)
	e.Service, err = StartProcess("asya-sync", e.Work, []string{
		// The service's own SQS credentials come from the default chain.
		"AWS_ACCESS_KEY_ID=e2e", "AWS_SECRET_ACCESS_KEY=e2e", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "ASYA_SYNC_CONFIG=",
	}, e.SyncBin, args...)
	if err != nil {
		return err
	}
	return WaitFor("asya-sync /readyz", 30*time.Second, e.Service, HTTPOK(e.metricsURL+"/readyz"))
}

// installController applies manifests/ as an installation would (the
// namespace, the CompositeController, the service's objects).
func (e *Env) installController(ctx context.Context) error {
	k := e.Cluster.Client
	for _, f := range []string{"namespace.yaml", "compositecontroller.yaml", "asya-sync.yaml"} {
		docs, err := ReadYAMLDocs(filepath.Join(e.Root, "manifests", f))
		if err != nil {
			return err
		}
		for _, d := range docs {
			if _, err := k.Apply(ctx, d, "e2e"); err != nil {
				return fmt.Errorf("manifests/%s: %s %s: %w", f, Str(d, "kind"), Str(d, "metadata", "name"), err)
			}
		}
	}
	return nil
}

// helmInstall installs the chart with docs/install.md's first values
// (examples/values-rabbitmq.yaml) against the test API server, checks what
// it created, and uninstalls again so that the plain manifests can be
// applied next. TestInstallVariantsAsPrinted renders every install the
// document prints.
func (e *Env) helmInstall(ctx context.Context) error {
	if _, err := e.Helm("install", "asya-sync", "./chart", "-n", "asya-system", "--create-namespace",
		"-f", "examples/values-rabbitmq.yaml"); err != nil {
		return err
	}
	k := e.Cluster.Client
	for _, want := range []struct{ apiVersion, kind, ns, name string }{
		{"apps/v1", "Deployment", "asya-system", "asya-sync"},
		{"v1", "Service", "asya-system", "asya-sync"},
		{"v1", "ConfigMap", "asya-system", "asya-sync"},
		{"policy/v1", "PodDisruptionBudget", "asya-system", "asya-sync"},
		{"metacontroller.k8s.io/v1alpha1", "CompositeController", "", "asya-sync"},
	} {
		r, err := k.ByKind(ctx, want.apiVersion, want.kind)
		if err != nil {
			return err
		}
		if _, err := k.Get(ctx, r, want.ns, want.name); err != nil {
			return fmt.Errorf("after helm install: %s %s: %w", want.kind, want.name, err)
		}
	}
	if _, err := e.Helm("uninstall", "asya-sync", "-n", "asya-system", "--wait", "--timeout", "60s"); err != nil {
		return err
	}
	return nil
}
