//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The node tier runs KEDA's metrics server as a cluster does: registered as
// the external.metrics.k8s.io APIService, reached by the API server's
// aggregation layer (front-proxy certificates, endpoint routing), and
// asking the operator's gRPC metrics service. The HPA controller reads it
// to scale an actor from one to N; KEDA's operator does zero to one.
const kedaMetricsService = "keda-operator-metrics-apiserver"

func (e *testEnv) startKEDAMetrics(ctx context.Context) error {
	bin := filepath.Join(os.Getenv("ASYA_E2E_KEDA_BIN"), "keda-adapter")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("KEDA's metrics server: %w (run .ci/e2e.sh tools)", err)
	}
	certs := filepath.Join(e.work, "keda-certs")
	serving := filepath.Join(e.work, "keda-metrics-serving")
	if err := os.MkdirAll(serving, 0o700); err != nil {
		return err
	}
	host := kedaMetricsService + "." + kedaNS + ".svc"
	if err := e.cluster.pki.issue(filepath.Join(serving, "tls.crt"), filepath.Join(serving, "tls.key"), host, host); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	port := ports[0]
	e.keda.metrics, err = startProcess("keda-adapter", e.work, []string{"WATCH_NAMESPACE=", "KEDA_CLUSTER_OBJECT_NAMESPACE=" + kedaNS, "POD_NAMESPACE=" + kedaNS},
		bin,
		"--kubeconfig="+e.cluster.kubeconfig,
		"--authentication-kubeconfig="+e.cluster.kubeconfig,
		"--authorization-kubeconfig="+e.cluster.kubeconfig,
		"--lister-kubeconfig="+e.cluster.kubeconfig,
		// Serving for the aggregator, at the node's address (an endpoint may
		// not be loopback); the gRPC client's certificates from cert-dir.
		"--bind-address="+nodeIP, "--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+filepath.Join(serving, "tls.crt"), "--tls-private-key-file="+filepath.Join(serving, "tls.key"),
		"--cert-dir="+certs,
		"--metrics-service-address="+e.keda.grpc,
		"--port=0")
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(e.cluster.pki.caPEM)
	if err != nil {
		return err
	}
	k := e.cluster.client
	for _, o := range []obj{
		{"apiVersion": "v1", "kind": "Service", "metadata": obj{"name": kedaMetricsService, "namespace": kedaNS},
			"spec": obj{"ports": []any{obj{"name": "https", "port": 443, "targetPort": port}}}},
		{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata":    obj{"name": kedaMetricsService, "namespace": kedaNS, "labels": obj{"kubernetes.io/service-name": kedaMetricsService}},
			"addressType": "IPv4",
			"endpoints":   []any{obj{"addresses": []any{nodeIP}, "conditions": obj{"ready": true}}},
			"ports":       []any{obj{"name": "https", "port": port, "protocol": "TCP"}}},
		{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": obj{"name": "v1beta1.external.metrics.k8s.io"},
			"spec": obj{"group": "external.metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
				"service":  obj{"name": kedaMetricsService, "namespace": kedaNS, "port": 443},
				"caBundle": base64.StdEncoding.EncodeToString(caPEM)}},
	} {
		if _, err := k.apply(ctx, o, "e2e"); err != nil {
			return fmt.Errorf("%s %s: %w", str(o, "kind"), str(o, "metadata", "name"), err)
		}
	}
	return waitFor("external.metrics.k8s.io served", 90*time.Second, e.keda.metrics, func() error {
		body, status, err := k.raw(ctx, "GET", "/apis/external.metrics.k8s.io/v1beta1", nil, "")
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("HTTP %d: %s", status, firstLine(body))
		}
		return nil
	})
}
