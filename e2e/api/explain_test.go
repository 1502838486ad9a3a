//go:build e2e

package api

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestKubectlExplain: the CRD installs with plain (client-side) kubectl
// apply, whose last-applied annotation must hold the whole CRD, and kubectl
// explain prints our fields' descriptions.
func TestKubectlExplain(t *testing.T) {
	crdFile := filepath.Join(env.Root, "manifests", "crd", "asya.sh_asyncactors.yaml")
	testenv.Kubectl(t, "apply", "-f", crdFile)

	docs, err := testenv.ReadYAMLDocs(crdFile)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%s: %v", crdFile, err)
	}
	versions, _ := testenv.Field(docs[0], "spec", "versions").([]any)
	props := testenv.MapAt(versions[0].(testenv.Obj), "schema", "openAPIV3Schema", "properties", "spec", "properties", "scaling", "properties", "queueLength")
	desc := strings.Join(strings.Fields(testenv.Str(props, "description")), " ")
	if len(desc) < 40 {
		t.Fatalf("spec.scaling.queueLength has no real description in the CRD: %q", desc)
	}

	// The API server publishes a changed CRD's OpenAPI a moment later.
	var out string
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := exec.Command(filepath.Join(env.Bin, "kubectl"), "--kubeconfig", env.Cluster.Kubeconfig,
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
