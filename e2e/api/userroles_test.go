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

// TestDefaultRolesCoverActors: with manifests/ applied, Kubernetes'
// default roles take in the AsyncActor rules through aggregation (the
// controller manager's clusterrole-aggregation controller): a user bound
// to edit in a namespace manages its actors, one bound to view only reads
// them, and neither writes their status, which is the hooks'.
func TestDefaultRolesCoverActors(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	ns := "e2e-roles-" + env.RunID
	testenv.EnsureNamespace(t, ctx, ns, false)
	for user, role := range map[string]string{"e2e-editor": "edit", "e2e-viewer": "view", "e2e-admin": "admin"} {
		testenv.Kubectl(t, "-n", ns, "create", "rolebinding", user, "--clusterrole="+role, "--user="+user)
	}
	for _, c := range []struct {
		user, verb, resource string
		want                 bool
	}{
		{"e2e-editor", "create", "asyncactors.asya.sh", true},
		{"e2e-editor", "delete", "asyncactors.asya.sh", true},
		{"e2e-editor", "patch", "asyncactors.asya.sh", true},
		{"e2e-editor", "list", "asyncactors.asya.sh", true},
		{"e2e-editor", "update", "asyncactors.asya.sh/status", false},
		{"e2e-admin", "deletecollection", "asyncactors.asya.sh", true},
		{"e2e-viewer", "get", "asyncactors.asya.sh", true},
		{"e2e-viewer", "watch", "asyncactors.asya.sh", true},
		{"e2e-viewer", "get", "asyncactors.asya.sh/status", true},
		{"e2e-viewer", "create", "asyncactors.asya.sh", false},
		{"e2e-viewer", "delete", "asyncactors.asya.sh", false},
	} {
		// Aggregation is asynchronous: wait for the answer to settle.
		var got bool
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
			got = canI(t, ns, c.user, c.verb, c.resource)
			if got == c.want || time.Now().After(deadline) {
				break
			}
		}
		if got != c.want {
			t.Errorf("kubectl auth can-i %s %s -n %s --as %s: %v, want %v", c.verb, c.resource, ns, c.user, got, c.want)
		}
	}
}

// canI is kubectl auth can-i as user: it exits 0 for yes, 1 for no. A
// resource written kind/subresource asks about the subresource (kubectl
// would read what follows the slash as an object's name).
func canI(t *testing.T, ns, user, verb, resource string) bool {
	t.Helper()
	args := []string{"--kubeconfig", env.Cluster.Kubeconfig, "auth", "can-i", verb, resource, "-n", ns, "--as", user}
	if r, sub, ok := strings.Cut(resource, "/"); ok {
		args[4], args = r, append(args, "--subresource", sub)
	}
	cmd := exec.Command(filepath.Join(env.Bin, "kubectl"), args...)
	out, err := cmd.Output()
	switch answer := strings.TrimSpace(string(out)); {
	case err == nil && answer == "yes":
		return true
	case answer == "no":
		return false
	default:
		t.Fatalf("kubectl auth can-i %s %s --as %s: %v, %q", verb, resource, user, err, out)
		return false
	}
}
