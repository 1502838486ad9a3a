//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKubectlExplain: the CRD installs with plain (client-side) kubectl
// apply, whose last-applied annotation must hold the whole CRD, and kubectl
// explain prints our fields' descriptions.
func TestKubectlExplain(t *testing.T) {
	crdFile := filepath.Join(env.root, "manifests", "crd", "asya.sh_asyncactors.yaml")
	kubectl(t, "apply", "-f", crdFile)

	docs, err := readYAMLDocs(crdFile)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%s: %v", crdFile, err)
	}
	versions, _ := field(docs[0], "spec", "versions").([]any)
	props := mapAt(versions[0].(obj), "schema", "openAPIV3Schema", "properties", "spec", "properties", "scaling", "properties", "queueLength")
	desc := strings.Join(strings.Fields(str(props, "description")), " ")
	if len(desc) < 40 {
		t.Fatalf("spec.scaling.queueLength has no real description in the CRD: %q", desc)
	}

	// The API server publishes a changed CRD's OpenAPI a moment later.
	var out string
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := exec.Command(filepath.Join(env.bin, "kubectl"), "--kubeconfig", env.cluster.kubeconfig,
			"explain", "asyncactor.spec.scaling.queueLength").CombinedOutput()
		out = strings.Join(strings.Fields(string(b)), " ")
		if err == nil && strings.Contains(out, desc) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl explain asyncactor.spec.scaling.queueLength (%v) does not print the description %q:\n%s", err, desc, b)
		}
		time.Sleep(time.Second)
	}
}
