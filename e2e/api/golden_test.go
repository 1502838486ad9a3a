//go:build e2e

package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestGoldenChildrenAccepted has the API server, with our CRD and KEDA's
// installed, admit every child of every golden sync response
// (testdata/sync/*/response.json) as a strict server-side apply dry run.
func TestGoldenChildrenAccepted(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	paths, err := filepath.Glob(filepath.Join(env.Root, "testdata", "sync", "*", "response.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden responses: %v", err)
	}
	checked := 0
	for _, path := range paths {
		var resp struct {
			Children []testenv.Obj `json:"children"`
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &resp); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, child := range resp.Children {
			testenv.EnsureNamespace(t, ctx, testenv.Str(child, "metadata", "namespace"), false)
			if err := dryRunApply(ctx, child); err != nil {
				t.Errorf("%s: API server rejects %s %s: %v", filepath.Base(filepath.Dir(path)), testenv.Str(child, "kind"), testenv.Str(child, "metadata", "name"), err)
			}
			checked++
		}
	}
	t.Logf("%d children of %d golden responses admitted", checked, len(paths))
}
