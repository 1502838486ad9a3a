package docs

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/transport"
)

// gatewayHeading is the section of docs/install.md that configures
// upstream's gateway; the node tier's TestNodeFlatGateway reads it too.
const gatewayHeading = "## 5. Upstream's gateway (optional)"

// TestGatewayPublishesWhereTheSidecarsDo: the gateway's environment in
// docs/install.md names the namespace of its actors and, for that
// namespace, the exchange a flat actor's sidecar there is given, the
// one its queue is bound on, on a transport with the default exchange.
func TestGatewayPublishesWhereTheSidecarsDo(t *testing.T) {
	var gw struct{ Env []corev1.EnvVar }
	if err := sigsyaml.UnmarshalStrict([]byte(fencedAfter(t, "docs/install.md", gatewayHeading, "yaml")), &gw); err != nil {
		t.Fatalf("docs/install.md: the gateway's environment: %v", err)
	}
	env := map[string]string{}
	for _, e := range gw.Env {
		env[e.Name] = e.Value
	}
	ns := env["ASYA_NAMESPACE"]
	if ns == "" {
		t.Fatal("docs/install.md gives the gateway no ASYA_NAMESPACE")
	}
	want := sidecarExchange(t, transport.Queue{Actor: "text-analyzer", Namespace: ns, Scoped: true})
	if got := env["ASYA_RABBITMQ_EXCHANGE"]; got != want {
		t.Errorf("docs/install.md gives the gateway of namespace %s ASYA_RABBITMQ_EXCHANGE=%q; the actors' queues there are bound on %q", ns, got, want)
	}
}
