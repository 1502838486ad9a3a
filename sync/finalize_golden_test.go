package sync

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/golden"
	"github.com/asya-sh/asya-sync/internal/scripted"
)

// Golden cases live in testdata/finalize/<case>/: description.txt (one
// line), request.json, response.json, calls.json (the queue operations the
// finalize made) and optionally world.json (what the broker answers) and
// config.yaml (else the service configuration of the sync cases).
const finalizeCasesDir = "../testdata/finalize"

func TestFinalizeGolden(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dirs, err := filepath.Glob(filepath.Join(finalizeCasesDir, "*", "request.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases in %s: %v", finalizeCasesDir, err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "description.txt")); err != nil {
				t.Errorf("no description.txt: %v", err)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			req, err := hook.DecodeSyncRequest(body)
			if err != nil {
				t.Fatalf("request.json: %v", err)
			}
			req.Finalizing = true
			cfg, err := config.Load(caseConfig(dir))
			if err != nil {
				t.Fatal(err)
			}
			var w struct {
				Transport scripted.Answers `json:"transport"`
			}
			if data, err := os.ReadFile(filepath.Join(dir, "world.json")); err == nil {
				if err := json.Unmarshal(data, &w); err != nil {
					t.Fatalf("world.json: %v", err)
				}
			}
			broker := scripted.New(w.Transport)
			h := &Handler{Config: cfg, Transports: broker, Script: testScript, FlatScript: testFlatScript, Actors: noOtherActors{}, Secrets: secretsExist{}, Now: func() time.Time { return now }}
			resp, err := h.Answer(context.Background(), req)
			if err != nil {
				t.Fatalf("finalize: %v", err)
			}
			golden.JSON(t, filepath.Join(dir, "response.json"), withChildObjects(t, resp))
			golden.JSON(t, filepath.Join(dir, "calls.json"), broker.Calls())
		})
	}
}
