//go:build e2e

package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// The credential rotations of docs/install.md, run as printed against the
// chart's default install (the generated CA, certificate and token), with
// the service running as the chart's Deployment says, its Secrets mounted
// by a stand-in for the kubelet, and the driver calling the hooks without
// pause the way Metacontroller does: it reads the Secrets only when the
// CompositeController's spec changes, presents the trimmed value of the
// named key, and trusts every certificate of the CA bundle.

const (
	rotationNS      = "e2e-rotation"
	rotationRelease = "asya-sync" // the doc's release name; its namespace is replaced
	// mountPeriod is how often the kubelet stand-in syncs the mounted Secrets.
	mountPeriod = 2 * time.Second
	// reloadPeriod is how often the service reads its credential files.
	reloadPeriod = 10 * time.Second
)

func TestHookCredentialRotationAsDocumented(t *testing.T) {
	ctx := testenv.CtxFor(t, 6*time.Minute)
	r := setupRotation(t, ctx)
	caller := r.callContinuously(ctx)

	t.Run("token", func(t *testing.T) {
		before := r.driverAuthorization()
		r.runDocBlock(t, ctx, "#### Rotating the token")
		r.settle()
		after := r.driverAuthorization()
		if after == before || !strings.HasPrefix(after, "Bearer ") {
			t.Errorf("the driver still presents the token it had before the rotation")
		}
		if got := testenv.Str(r.driverController(), "spec", "hooks", "sync", "webhook", "authorization", "secretRef", "key"); got != "token-2" {
			t.Errorf("the CompositeController names the key %q, want token-2", got)
		}
		if n := r.metric(t, `asya_sync_auth_token_accepted_total{key="token-2"}`); n == 0 {
			t.Errorf("no call was accepted with the new key's token")
		}
		// The old token is refused now.
		if code := r.callWith(t, ctx, before); code != 401 {
			t.Errorf("the retired token: HTTP %d, want 401", code)
		}
	})

	t.Run("CA and certificate", func(t *testing.T) {
		newCA, err := testenv.NewCA("asya-sync rotated CA")
		if err != nil {
			t.Fatal(err)
		}
		crt, key, err := newCA.IssueServer(rotationRelease+"."+rotationNS, rotationRelease+"."+rotationNS+".svc",
			rotationRelease+"."+rotationNS+".svc.cluster.local")
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"new-ca.crt": newCA.PEM, "new-tls.crt": crt, "new-tls.key": key} {
			if err := os.WriteFile(filepath.Join(r.dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r.runDocBlock(t, ctx, "#### Rotating the CA and certificate")
		r.settle()
		cc := r.driverController()
		if got := testenv.Str(cc, "spec", "hooks", "sync", "webhook", "caBundle", "secretRef", "key"); got != "ca.crt" {
			t.Errorf("the CompositeController reads the CA bundle from %q, want ca.crt", got)
		}
		bundle, err := testenv.SecretKey(ctx, env.Cluster.Client, testenv.Obj{"name": rotationRelease + "-tls", "namespace": rotationNS, "key": "ca.crt"}, "")
		if err != nil || string(bundle) != string(newCA.PEM) {
			t.Errorf("ca.crt after the rotation is not the new CA alone (%v)", err)
		}
		if serial := r.servedSerial(t); serial != certSerial(t, crt) {
			t.Errorf("the service serves certificate %s, want the new one %s", serial, certSerial(t, crt))
		}
	})

	// A key the Secret lacks is refused before Metacontroller is pointed
	// at it: it would stop calling every hook of the controller.
	t.Run("missing key refused", func(t *testing.T) {
		for _, set := range []string{"hooks.auth.token.key=token-3", "hooks.tls.caBundleKey=ca-next.crt"} {
			out, err := env.Helm("upgrade", rotationRelease, "./chart", "-n", rotationNS, "--reuse-values", "--set", set)
			key := set[strings.Index(set, "=")+1:]
			if err == nil || !strings.Contains(out, fmt.Sprintf("has no key %q", key)) {
				t.Errorf("helm upgrade --set %s: %v, want a refusal naming the missing key\n%s", set, err, out)
			}
		}
	})

	calls, failures := caller.stop()
	t.Logf("%d hook calls during the rotations, %d failed", calls, len(failures))
	if len(failures) > 0 {
		t.Errorf("%d of %d hook calls failed during the documented rotations; the first:\n  %s",
			len(failures), calls, strings.Join(failures[:min(len(failures), 5)], "\n  "))
	}
	if calls < 100 {
		t.Errorf("only %d hook calls during the rotations", calls)
	}
	// One refusal: the retired token's, on purpose.
	if n, bad := r.metric(t, "asya_sync_auth_failures_total"), r.metric(t, `asya_sync_auth_failures_total{reason="bad_token"}`); n != 1 || bad != 1 {
		t.Errorf("the service refused %v hook calls (%v for a bad token); want 1, the retired token's", n, bad)
	}
}

// rotation is the chart's default install in rotationNS, served by a
// process of the service on loopback.
type rotation struct {
	dir        string // where the doc's commands run: ./chart is the repository's chart
	port       int
	metricsURL string
	driver     *testenv.Driver
	service    *testenv.Process
}

func setupRotation(t *testing.T, ctx context.Context) *rotation {
	t.Helper()
	testenv.EnsureNamespace(t, ctx, rotationNS, false)
	ports, err := testenv.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	r := &rotation{dir: t.TempDir(), port: ports[0], metricsURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1])}
	if err := os.Symlink(filepath.Join(env.Root, "chart"), filepath.Join(r.dir, "chart")); err != nil {
		t.Fatal(err)
	}
	// The hook URL names the Service, as the chart's default does, at the
	// port the process listens on; the driver dials loopback for it.
	hookURL := fmt.Sprintf("https://%s.%s:%d", rotationRelease, rotationNS, r.port)
	if _, err := env.Helm(append([]string{"install", rotationRelease, "./chart", "-n", rotationNS,
		"--set", "compositeController.name=asya-sync-rotation", "--set", "compositeController.hookURL=" + hookURL}, testenv.BrokerUser...)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := env.Helm("uninstall", rotationRelease, "-n", rotationNS, "--wait", "--timeout", "60s"); err != nil {
			t.Error(err)
		}
	})

	var mounts *testenv.SecretMounts
	r.service, mounts = startChartService(t, ctx, rotationNS, rotationRelease, r.port, ports[1])

	r.driver = loopbackDriver(t, ctx, "asya-sync-rotation", r.port)

	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); mounts.Run(bg, mountPeriod) }()
	go func() { defer wg.Done(); r.driver.Follow(bg, 200*time.Millisecond) }()
	t.Cleanup(func() { stop(); wg.Wait() })
	return r
}

// startChartService runs the service as the Deployment release installed in
// ns says, its Secret volumes mounted by the kubelet stand-in (synced once;
// the caller runs it), on loopback port with metrics on metricsPort.
func startChartService(t *testing.T, ctx context.Context, ns, release string, port, metricsPort int) (*testenv.Process, *testenv.SecretMounts) {
	t.Helper()
	d, err := env.ChartDeployment(ctx, ns, release)
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := testenv.MountSecrets(ctx, env.Cluster.Client, d, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args, err := mounts.CredentialArgs(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.RequireFlags(args, "--tls-cert-file", "--tls-key-file", "--auth-token-dir"); err != nil {
		t.Fatalf("the Deployment: %v", err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "asya-sync.yaml")
	if err := os.WriteFile(cfg, []byte(env.TestConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := testenv.StartProcess("asya-sync-"+ns, dir, []string{"ASYA_SYNC_CONFIG=", "AWS_EC2_METADATA_DISABLED=true"}, env.SyncBin,
		append([]string{"serve", "--config", cfg, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
			"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort)}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	if err := testenv.WaitFor("asya-sync /readyz", 30*time.Second, p, testenv.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", metricsPort))); err != nil {
		t.Fatal(err)
	}
	return p, mounts
}

// loopbackDriver is a driver for the CompositeController name whose
// webhooks, whatever host their URL names, reach port on loopback.
func loopbackDriver(t *testing.T, ctx context.Context, name string, port int) *testenv.Driver {
	t.Helper()
	k := env.Cluster.Client
	ccGVR, err := k.ByKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		t.Fatal(err)
	}
	cc, err := k.Get(ctx, ccGVR, "", name)
	if err != nil {
		t.Fatal(err)
	}
	d, err := testenv.NewDriver(ctx, k, cc)
	if err != nil {
		t.Fatal(err)
	}
	loopback := fmt.Sprintf("127.0.0.1:%d", port)
	d.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, loopback)
	}
	for _, wh := range d.Hooks {
		wh.Client.Transport.(*http.Transport).DialContext = d.Dial
	}
	return d
}

// settle waits until a change of a Secret has reached the service: the
// kubelet stand-in's period, the service's reload period, and a margin.
func (r *rotation) settle() { time.Sleep(mountPeriod + reloadPeriod + 3*time.Second) }

// runDocBlock runs the first sh block after heading in docs/install.md,
// command by command, in r.dir with the test cluster's kubectl and helm,
// in rotationNS instead of asya-system. A sleep stands for the wait the
// kubelet and the service need: it must allow for the kubelet's sync
// period (60 s) and the service's reload, and is run as settle, the same
// wait at the stand-in's pace.
func (r *rotation) runDocBlock(t *testing.T, ctx context.Context, heading string) {
	t.Helper()
	runDocCommands(t, ctx, heading, r.dir, rotationNS, r.settle)
}

// runDocCommands runs the first sh block after heading in docs/install.md
// as runDocBlock describes, in dir and namespace ns, with wait for a sleep.
func runDocCommands(t *testing.T, ctx context.Context, heading, dir, ns string, wait func()) {
	t.Helper()
	cmds, err := docCommands(filepath.Join(env.Root, "docs", "install.md"), heading)
	if err != nil {
		t.Fatal(err)
	}
	sleep := regexp.MustCompile(`^sleep (\d+)\b`)
	for _, c := range cmds {
		c = strings.ReplaceAll(c, "asya-system", ns)
		if m := sleep.FindStringSubmatch(c); m != nil {
			if n, _ := strconv.Atoi(m[1]); n < 70 {
				t.Errorf("%q: the kubelet takes up to its sync period (60 s) to update a mounted Secret, and the service 10 s more", c)
			}
			wait()
			continue
		}
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", c)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"PATH="+env.Bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+env.Cluster.Kubeconfig,
			"HELM_CACHE_HOME="+filepath.Join(env.Work, "helm", "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(env.Work, "helm", "config"),
			"HELM_DATA_HOME="+filepath.Join(env.Work, "helm", "data"),
		)
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s\n%s", c, out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
}

// docCommands reads the commands of the first sh block after heading:
// comment lines and blank lines left out, continued lines joined.
func docCommands(path, heading string) ([]string, error) {
	block, err := testenv.DocFence(path, heading, "sh", "")
	if err != nil {
		return nil, err
	}
	cmds := blockCommands(block)
	if len(cmds) == 0 {
		return nil, fmt.Errorf("%s: the sh block after %q has no command", path, heading)
	}
	return cmds, nil
}

// blockCommands are the commands of an sh block: comment lines and blank
// lines left out, continued lines joined.
func blockCommands(block string) []string {
	var cmds []string
	cur := ""
	for _, line := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if cur == "" && (strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\")
			continue
		}
		cmds = append(cmds, cur+line)
		cur = ""
	}
	return cmds
}

// driverAuthorization is the Authorization header the driver presents now.
func (r *rotation) driverAuthorization() string {
	r.driver.Mu.RLock()
	defer r.driver.Mu.RUnlock()
	if r.driver.Hooks == nil {
		return ""
	}
	return r.driver.Hooks["sync"].Authorization
}

func (r *rotation) driverController() testenv.Obj { return r.driver.Controller() }

// callWith posts a customize call with the given Authorization header on
// the driver's current connection and returns the HTTP status.
func (r *rotation) callWith(t *testing.T, ctx context.Context, authorization string) int {
	t.Helper()
	r.driver.Mu.RLock()
	wh := r.driver.Hooks["customize"]
	r.driver.Mu.RUnlock()
	req, err := http.NewRequestWithContext(ctx, "POST", wh.URL, strings.NewReader(testenv.MustJSON(rotationRequest(r.driverController(), false))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", authorization)
	resp, err := wh.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// servedSerial is the serial number of the certificate the service serves.
func (r *rotation) servedSerial(t *testing.T) string {
	t.Helper()
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the served certificate only
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func certSerial(t *testing.T, certPEM []byte) string {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

// metric sums the samples of the service's metric whose line starts with
// name (a name with or without labels).
func (r *rotation) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(r.metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// rotationRequest is a hook request for an actor of a transport the
// service does not configure: every hook answers it at once, with no
// broker and nothing written to the cluster, so that only the calls
// themselves are under test.
func rotationRequest(cc testenv.Obj, finalizing bool) testenv.Obj {
	parent := testenv.Obj{
		"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": testenv.Obj{"name": "rotating", "namespace": rotationNS, "uid": "5e0c7a52-0000-4000-8000-000000000001",
			"generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z"},
		"spec": testenv.Obj{"transport": "e2e-not-configured", "workload": testenv.Obj{"template": testenv.Obj{"spec": testenv.Obj{
			"containers": []any{testenv.Obj{"name": "asya-runtime", "image": "python:3.12-slim"}}}}}},
	}
	req := testenv.Obj{"controller": cc, "parent": parent, "children": testenv.Obj{}, "related": testenv.Obj{}}
	if finalizing {
		testenv.MapAt(parent, "metadata")["deletionTimestamp"] = "2026-01-01T00:01:00Z"
		req["finalizing"] = true
	}
	return req
}

// hookCaller calls customize, sync and finalize in turn through the driver
// until stopped, and keeps every failure.
type hookCaller struct {
	cancel   context.CancelFunc
	done     chan struct{}
	calls    atomic.Int64
	mu       sync.Mutex
	failures []string
}

func (r *rotation) callContinuously(ctx context.Context) *hookCaller {
	ctx, cancel := context.WithCancel(ctx)
	c := &hookCaller{cancel: cancel, done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			for _, hook := range []string{"customize", "sync", "finalize"} {
				var resp testenv.Obj
				err := r.driver.Post(ctx, hook, rotationRequest(r.driverController(), hook == "finalize"), &resp)
				if ctx.Err() != nil {
					return
				}
				c.calls.Add(1)
				if err != nil {
					c.mu.Lock()
					c.failures = append(c.failures, fmt.Sprintf("%5.1fs %s: %v", time.Since(start).Seconds(), hook, err))
					c.mu.Unlock()
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return c
}

func (c *hookCaller) stop() (int64, []string) {
	c.cancel()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls.Load(), c.failures
}
