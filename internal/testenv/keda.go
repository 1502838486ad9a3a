//go:build e2e

package testenv

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
	Operator, webhooks *Process
	webhooksMetrics    string   // the webhooks' Prometheus endpoint
	grpc               string   // the operator's metrics service
	metrics            *Process // the metrics server, in the node tier only
}

// NeedKEDA skips the test when KEDA is not running (ASYA_E2E_KEDA_BIN unset).
func NeedKEDA(t *testing.T) {
	t.Helper()
	if env.KEDA == nil {
		if required() {
			t.Fatal("KEDA is not running (ASYA_E2E_KEDA_BIN)")
		}
		t.Skip("KEDA is not running: set ASYA_E2E_KEDA_BIN (.ci/e2e.sh does)")
	}
}

// startKEDA starts the webhooks, registers them for KEDA's resources as
// KEDA's own manifest does (but at a loopback url, refusing what they
// cannot answer), then starts the operator.
func (e *Env) startKEDA(ctx context.Context, bin string) (*keda, error) {
	for _, b := range []string{"keda-operator", "keda-webhooks"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("%s missing in %s (run .ci/e2e.sh tools)", b, bin)
		}
	}
	k := e.Cluster.Client
	if _, err := k.Apply(ctx, Obj{"apiVersion": "v1", "kind": "Namespace", "metadata": Obj{"name": kedaNS}}, "e2e"); err != nil {
		return nil, err
	}
	certs := filepath.Join(e.Work, "keda-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(e.Cluster.pki.caPEM)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(certs, "ca.crt"), caPEM, 0o600); err != nil {
		return nil, err
	}
	if err := e.Cluster.pki.issue(filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key"), "keda",
		"localhost", "keda-operator.keda.svc", "keda-admission-webhooks.keda.svc"); err != nil {
		return nil, err
	}
	ports, err := FreePorts(6)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	kedaEnv := []string{"WATCH_NAMESPACE=", "POD_NAMESPACE=" + kedaNS, "KEDA_CLUSTER_OBJECT_NAMESPACE=" + kedaNS, "KUBECONFIG=" + e.Cluster.Kubeconfig}
	kd := &keda{webhooksMetrics: "http://" + addr(0) + "/metrics", grpc: addr(5)}
	kd.webhooks, err = StartProcess("keda-webhooks", e.Work, kedaEnv, filepath.Join(bin, "keda-webhooks"),
		"--kubeconfig="+e.Cluster.Kubeconfig, "--cert-dir="+certs, "--port="+strconv.Itoa(ports[2]),
		"--metrics-bind-address="+addr(0), "--health-probe-bind-address="+addr(1))
	if err != nil {
		return nil, err
	}
	if err := WaitFor("KEDA webhooks", time.Minute, kd.webhooks, HTTPOK("http://"+addr(1)+"/readyz")); err != nil {
		kd.Stop()
		return nil, err
	}
	if err := e.registerKEDAWebhooks(ctx, "https://"+addr(2), caPEM); err != nil {
		kd.Stop()
		return nil, err
	}
	operator := filepath.Join(bin, "keda-operator")
	args := []string{"--kubeconfig=" + e.Cluster.Kubeconfig, "--cert-dir=" + certs,
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
	kd.Operator, err = StartProcess("keda-operator", e.Work, kedaEnv, operator, args...)
	if err != nil {
		kd.Stop()
		return nil, err
	}
	if err := WaitFor("KEDA operator", 2*time.Minute, kd.Operator, HTTPOK("http://"+addr(4)+"/readyz")); err != nil {
		kd.Stop()
		return nil, err
	}
	return kd, nil
}

// registerKEDAWebhooks applies KEDA's ValidatingWebhookConfiguration from
// its module, each webhook pointed at url with the CA bundle, and with
// failurePolicy Fail: what the webhooks cannot answer is refused, so a
// test that applies a KEDA object proves they admitted it.
func (e *Env) registerKEDAWebhooks(ctx context.Context, url string, caPEM []byte) error {
	docs, err := ReadYAMLDocs(filepath.Join(filepath.Dir(filepath.Dir(e.kedaCRD)), "webhooks", "validation_webhooks.yaml"))
	if err != nil {
		return err
	}
	for _, d := range docs {
		hooks, _ := d["webhooks"].([]any)
		for _, h := range hooks {
			wh := h.(Obj)
			path := Str(wh, "clientConfig", "service", "path")
			wh["clientConfig"] = Obj{"url": url + path, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
			wh["failurePolicy"] = "Fail"
		}
		if _, err := e.Cluster.Client.Apply(ctx, d, "e2e"); err != nil {
			return fmt.Errorf("KEDA webhooks: %w", err)
		}
	}
	return nil
}

// Pause stops the operator until the test ends; the webhooks keep running.
func (kd *keda) Pause(t *testing.T) {
	if err := kd.Operator.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("pause the KEDA operator: %v", err)
	}
	t.Cleanup(func() { _ = kd.Operator.cmd.Process.Signal(syscall.SIGCONT) })
}

func (kd *keda) Stop() {
	for _, p := range []*Process{kd.metrics, kd.Operator, kd.webhooks} {
		if p != nil {
			p.Stop(10 * time.Second)
		}
	}
}

// Admitted counts the admission requests KEDA's webhooks answered by
// webhook path (e.g. /validate-keda-sh-v1alpha1-scaledobject) and HTTP
// code, from their controller-runtime metrics.
func (kd *keda) Admitted(path, code string) (int, error) {
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

// The node tier runs KEDA's metrics server as a cluster does: registered as
// the external.metrics.k8s.io APIService, reached by the API server's
// aggregation layer (front-proxy certificates, endpoint routing), and
// asking the operator's gRPC metrics service. The HPA controller reads it
// to scale an actor from one to N; KEDA's operator does zero to one.
const kedaMetricsService = "keda-operator-metrics-apiserver"

func (e *Env) startKEDAMetrics(ctx context.Context) error {
	bin := filepath.Join(os.Getenv("ASYA_E2E_KEDA_BIN"), "keda-adapter")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("KEDA's metrics server: %w (run .ci/e2e.sh tools)", err)
	}
	certs := filepath.Join(e.Work, "keda-certs")
	serving := filepath.Join(e.Work, "keda-metrics-serving")
	if err := os.MkdirAll(serving, 0o700); err != nil {
		return err
	}
	host := kedaMetricsService + "." + kedaNS + ".svc"
	if err := e.Cluster.pki.issue(filepath.Join(serving, "tls.crt"), filepath.Join(serving, "tls.key"), host, host); err != nil {
		return err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	port := ports[0]
	e.KEDA.metrics, err = StartProcess("keda-adapter", e.Work, []string{"WATCH_NAMESPACE=", "KEDA_CLUSTER_OBJECT_NAMESPACE=" + kedaNS, "POD_NAMESPACE=" + kedaNS},
		bin,
		"--kubeconfig="+e.Cluster.Kubeconfig,
		"--authentication-kubeconfig="+e.Cluster.Kubeconfig,
		"--authorization-kubeconfig="+e.Cluster.Kubeconfig,
		"--lister-kubeconfig="+e.Cluster.Kubeconfig,
		// Serving for the aggregator, at the node's address (an endpoint may
		// not be loopback); the gRPC client's certificates from cert-dir.
		"--bind-address="+NodeIP, "--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+filepath.Join(serving, "tls.crt"), "--tls-private-key-file="+filepath.Join(serving, "tls.key"),
		"--cert-dir="+certs,
		"--metrics-service-address="+e.KEDA.grpc,
		"--port=0")
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(e.Cluster.pki.caPEM)
	if err != nil {
		return err
	}
	k := e.Cluster.Client
	for _, o := range []Obj{
		{"apiVersion": "v1", "kind": "Service", "metadata": Obj{"name": kedaMetricsService, "namespace": kedaNS},
			"spec": Obj{"ports": []any{Obj{"name": "https", "port": 443, "targetPort": port}}}},
		{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata":    Obj{"name": kedaMetricsService, "namespace": kedaNS, "labels": Obj{"kubernetes.io/service-name": kedaMetricsService}},
			"addressType": "IPv4",
			"endpoints":   []any{Obj{"addresses": []any{NodeIP}, "conditions": Obj{"ready": true}}},
			"ports":       []any{Obj{"name": "https", "port": port, "protocol": "TCP"}}},
		{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": Obj{"name": "v1beta1.external.metrics.k8s.io"},
			"spec": Obj{"group": "external.metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
				"service":  Obj{"name": kedaMetricsService, "namespace": kedaNS, "port": 443},
				"caBundle": base64.StdEncoding.EncodeToString(caPEM)}},
	} {
		if _, err := k.Apply(ctx, o, "e2e"); err != nil {
			return fmt.Errorf("%s %s: %w", Str(o, "kind"), Str(o, "metadata", "name"), err)
		}
	}
	return WaitFor("external.metrics.k8s.io served", 90*time.Second, e.KEDA.metrics, func() error {
		body, status, err := k.Raw(ctx, "GET", "/apis/external.metrics.k8s.io/v1beta1", nil, "")
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("HTTP %d: %s", status, FirstLine(body))
		}
		return nil
	})
}
