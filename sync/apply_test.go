package sync

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/asya-sh/asya-sync/internal/dynamicapply"
)

// TestGoldenChildrenSurviveApply reads every golden sync and finalize
// response: no child may hold a list whose entries Metacontroller's apply
// would merge into one, and re-applying a child onto itself, as
// Metacontroller's first update after creating it does, must change
// nothing.
func TestGoldenChildrenSurviveApply(t *testing.T) {
	paths, err := filepath.Glob("../testdata/*/*/response.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden responses: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(path)))+"/"+filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var resp struct {
				Children []map[string]any `json:"children"`
			}
			if err := json.Unmarshal(data, &resp); err != nil {
				t.Fatal(err)
			}
			for _, child := range resp.Children {
				meta, _ := child["metadata"].(map[string]any)
				name := child["kind"].(string) + " " + meta["name"].(string)
				for _, c := range dynamicapply.Collisions(child) {
					t.Errorf("%s: %s", name, c)
				}
				if dynamicapply.Changes(child, child, child) {
					t.Errorf("%s changes when re-applied onto itself", name)
				}
			}
		})
	}
}
