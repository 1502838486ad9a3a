//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claimFields are the fields Crossplane writes into a claim's spec.
var claimFields = []string{"compositionRef", "compositionRevisionRef", "compositionRevisionSelector", "compositionSelector",
	"compositionUpdatePolicy", "compositeDeletePolicy", "resourceRef", "writeConnectionSecretToRef", "publishConnectionDetailsTo"}

// TestCrossplaneClaimFields: a flat actor carrying every field Crossplane
// writes into a claim applies with kubectl's strict field validation,
// keeps those fields as written, and syncs as it would without them.
func TestCrossplaneClaimFields(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	ns := "e2e-claim-fields"
	ensureNamespace(t, ctx, ns, true)
	file := filepath.Join(env.root, "e2e", "testdata", "actors", "flat-crossplane-claim.yaml")
	kubectl(t, "apply", "--validate=strict", "-n", ns, "-f", file)
	converge(t, ctx, ns, "enrich")

	a := getActor(t, ctx, ns, "enrich")
	written := loadActor(t, file, ns)
	for _, f := range claimFields {
		if got, want := mustJSON(field(a, "spec", f)), mustJSON(field(written, "spec", f)); got != want {
			t.Errorf("spec.%s stored as %s, want %s as written", f, got, want)
		}
	}
	if c := conditions(a)["TransportReady"]; str(c, "status") != "True" {
		t.Errorf("TransportReady %s", mustJSON(c))
	}
	if c := conditions(a)["WorkloadReady"]; str(c, "reason") == "InvalidSpec" {
		t.Errorf("refused: %s", mustJSON(c))
	}
	d, ok := childrenOf(t, ctx, ns, "enrich")["Deployment/enrich"]
	if !ok {
		t.Fatalf("no Deployment; status %s", mustJSON(a["status"]))
	}
	if pod := mustJSON(field(d, "spec", "template", "spec")); !strings.Contains(pod, `{"name":"ASYA_HANDLER","value":"enrich.handlers.run"}`) {
		t.Errorf("the runtime does not run the handler: %s", pod)
	}
	deleteAndFinalize(t, ctx, ns, "enrich")
}
