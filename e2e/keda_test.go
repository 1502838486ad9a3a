//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kedaNS is where KEDA runs: its own namespace, as in a real install.
const kedaNS = "keda"

// keda is KEDA's operator and admission webhooks, built from the KEDA
// module at the version go.mod pins (.ci/e2e.sh tools), run against the
// test API server. The operator creates each ScaledObject's HPA and scales
// workloads between zero and one replica itself. Only the node tier runs
// the HPA controller and KEDA's metrics server, which scale beyond one.
type keda struct {
	operator, webhooks *process
	webhooksMetrics    string   // the webhooks' Prometheus endpoint
	grpc               string   // the operator's metrics service
	metrics            *process // the metrics server, in the node tier only
}

func needKEDA(t *testing.T) {
	t.Helper()
	if env.keda == nil {
		if required() {
			t.Fatal("KEDA is not running (ASYA_E2E_KEDA_BIN)")
		}
		t.Skip("KEDA is not running: set ASYA_E2E_KEDA_BIN (.ci/e2e.sh does)")
	}
}

// startKEDA starts the webhooks, registers them for KEDA's resources as
// KEDA's own manifest does (but at a loopback url, refusing what they
// cannot answer), then starts the operator.
func (e *testEnv) startKEDA(ctx context.Context, bin string) (*keda, error) {
	for _, b := range []string{"keda-operator", "keda-webhooks"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("%s missing in %s (run .ci/e2e.sh tools)", b, bin)
		}
	}
	k := e.cluster.client
	if _, err := k.apply(ctx, obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": kedaNS}}, "e2e"); err != nil {
		return nil, err
	}
	certs := filepath.Join(e.work, "keda-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(e.cluster.pki.caPEM)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(certs, "ca.crt"), caPEM, 0o600); err != nil {
		return nil, err
	}
	if err := e.cluster.pki.issue(filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key"), "keda",
		"localhost", "keda-operator.keda.svc", "keda-admission-webhooks.keda.svc"); err != nil {
		return nil, err
	}
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	kedaEnv := []string{"WATCH_NAMESPACE=", "POD_NAMESPACE=" + kedaNS, "KEDA_CLUSTER_OBJECT_NAMESPACE=" + kedaNS, "KUBECONFIG=" + e.cluster.kubeconfig}
	kd := &keda{webhooksMetrics: "http://" + addr(0) + "/metrics", grpc: addr(5)}
	kd.webhooks, err = startProcess("keda-webhooks", e.work, kedaEnv, filepath.Join(bin, "keda-webhooks"),
		"--kubeconfig="+e.cluster.kubeconfig, "--cert-dir="+certs, "--port="+strconv.Itoa(ports[2]),
		"--metrics-bind-address="+addr(0), "--health-probe-bind-address="+addr(1))
	if err != nil {
		return nil, err
	}
	if err := waitFor("KEDA webhooks", time.Minute, kd.webhooks, httpOK("http://"+addr(1)+"/readyz")); err != nil {
		kd.stop()
		return nil, err
	}
	if err := e.registerKEDAWebhooks(ctx, "https://"+addr(2), caPEM); err != nil {
		kd.stop()
		return nil, err
	}
	operator := filepath.Join(bin, "keda-operator")
	args := []string{"--kubeconfig=" + e.cluster.kubeconfig, "--cert-dir=" + certs,
		"--metrics-bind-address=" + addr(3), "--health-probe-bind-address=" + addr(4),
		"--metrics-service-bind-address=" + addr(5)}
	// Nothing here to patch: the webhooks are registered above and there is
	// no metrics APIService. Releases before these flags patch nothing
	// without certificate rotation, which is off by default.
	help, _ := exec.Command(operator, "--help").CombinedOutput()
	for _, flag := range []string{"--enable-webhook-patching", "--enable-apiservice-patching"} {
		if strings.Contains(string(help), flag) {
			args = append(args, flag+"=false")
		}
	}
	kd.operator, err = startProcess("keda-operator", e.work, kedaEnv, operator, args...)
	if err != nil {
		kd.stop()
		return nil, err
	}
	if err := waitFor("KEDA operator", 2*time.Minute, kd.operator, httpOK("http://"+addr(4)+"/readyz")); err != nil {
		kd.stop()
		return nil, err
	}
	return kd, nil
}

// registerKEDAWebhooks applies KEDA's ValidatingWebhookConfiguration from
// its module, each webhook pointed at url with the CA bundle, and with
// failurePolicy Fail: what the webhooks cannot answer is refused, so a
// test that applies a KEDA object proves they admitted it.
func (e *testEnv) registerKEDAWebhooks(ctx context.Context, url string, caPEM []byte) error {
	docs, err := readYAMLDocs(filepath.Join(filepath.Dir(filepath.Dir(e.kedaCRD)), "webhooks", "validation_webhooks.yaml"))
	if err != nil {
		return err
	}
	for _, d := range docs {
		hooks, _ := d["webhooks"].([]any)
		for _, h := range hooks {
			wh := h.(obj)
			path := str(wh, "clientConfig", "service", "path")
			wh["clientConfig"] = obj{"url": url + path, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
			wh["failurePolicy"] = "Fail"
		}
		if _, err := e.cluster.client.apply(ctx, d, "e2e"); err != nil {
			return fmt.Errorf("KEDA webhooks: %w", err)
		}
	}
	return nil
}

// pause stops the operator until the test ends; the webhooks keep running.
func (kd *keda) pause(t *testing.T) {
	if err := kd.operator.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("pause the KEDA operator: %v", err)
	}
	t.Cleanup(func() { _ = kd.operator.cmd.Process.Signal(syscall.SIGCONT) })
}

func (kd *keda) stop() {
	for _, p := range []*process{kd.metrics, kd.operator, kd.webhooks} {
		if p != nil {
			p.stop(10 * time.Second)
		}
	}
}

// admitted counts the admission requests KEDA's webhooks answered by
// webhook path (e.g. /validate-keda-sh-v1alpha1-scaledobject) and HTTP
// code, from their controller-runtime metrics.
func (kd *keda) admitted(path, code string) (int, error) {
	resp, err := http.Get(kd.webhooksMetrics)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	want := fmt.Sprintf(`controller_runtime_webhook_requests_total{code=%q,webhook=%q} `, code, path)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			n, err := strconv.ParseFloat(v, 64)
			return int(n), err
		}
	}
	return 0, sc.Err()
}

// soCondition is the ScaledObject's Ready condition as KEDA set it (nil
// while KEDA has not said).
func soCondition(t *testing.T, ctx context.Context, ns, name string) obj {
	t.Helper()
	r := gvr{APIVersion: "keda.sh/v1alpha1", Resource: "scaledobjects", Kind: "ScaledObject", Namespaced: true}
	so, err := env.cluster.client.get(ctx, r, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return conditions(so)["Ready"]
}

// scalingFollowsKEDA syncs the actor until KEDA has judged its
// ScaledObject (Ready True or False, and KEDA's message), then until the
// actor's ScalingReady says the same; it returns KEDA's verdict.
func scalingFollowsKEDA(t *testing.T, ctx context.Context, ns, name string) (kedaSays, msg string) {
	t.Helper()
	syncingUntil(t, ctx, env.driver, name, time.Minute, "KEDA's verdict on the ScaledObject", func() error {
		c := soCondition(t, ctx, ns, name)
		kedaSays, msg = str(c, "status"), str(c, "message")
		if kedaSays == "" || kedaSays == "Unknown" {
			return fmt.Errorf("Ready is %s", mustJSON(c))
		}
		return nil
	})
	syncingUntil(t, ctx, env.driver, name, 30*time.Second, "the actor's ScalingReady follows KEDA", func() error {
		return want("ScalingReady", str(conditions(getActor(t, ctx, ns, name))["ScalingReady"], "status"), kedaSays)
	})
	return kedaSays, msg
}

// awaitKEDA waits, when KEDA runs, until it has judged the actor's
// ScaledObject, then syncs the actor until it settles on that verdict, as
// Metacontroller does on the watch event of KEDA's status write.
func awaitKEDA(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	if env.keda == nil {
		return
	}
	err := waitFor("KEDA's verdict on ScaledObject "+ns+"/"+name, time.Minute, env.keda.operator, func() error {
		if s := str(soCondition(t, ctx, ns, name), "status"); s != "True" && s != "False" {
			return fmt.Errorf("Ready is %q", s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	converge(t, ctx, ns, name)
}

// conditionIs is nil when the condition has the status, else an error
// showing the condition.
func conditionIs(c obj, status string) error {
	if str(c, "status") == status {
		return nil
	}
	return fmt.Errorf("condition is %s", mustJSON(c))
}
