package sync

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/golden"
	"github.com/asya-sh/asya-sync/internal/scripted"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// Golden cases live in testdata/sync/<case>/: description.txt (one line),
// request.json, response.json, calls.json (the queue operations the sync
// made), and optionally world.json describing what the broker answers and
// the time, and config.yaml, a service configuration of the case's own.
const casesDir = "../testdata/sync"

// testScript stands in for the runtime script so that golden files do not
// change with every edit of the real one.
var testScript = asyaruntime.Script{Source: "# asya runtime\n", Hash: "0123456789abcdef"}

// testFlatScript stands in for the flat actors' runtime likewise.
var testFlatScript = asyaruntime.Script{Source: "# asya runtime, http\n", Hash: "fedcba9876543210"}

// defaultNow is the clock of a case without world.json's now.
var defaultNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// world is what a case's surroundings do.
type world struct {
	Now *time.Time `json:"now,omitempty"`
	// TimeSensitive marks a case whose status changes with time by design
	// (Degraded after five minutes), exempt from TestLaterSyncSameStatus.
	TimeSensitive bool             `json:"timeSensitive,omitempty"`
	Transport     scripted.Answers `json:"transport"`
}

func TestGolden(t *testing.T) {
	for _, dir := range caseDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			req, h := loadCase(t, dir)
			resp, err := h.Answer(context.Background(), req)
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			golden.JSON(t, filepath.Join(dir, "response.json"), withChildObjects(t, resp))
			golden.JSON(t, filepath.Join(dir, "calls.json"), h.Transports.(*scripted.Broker).Calls())
		})
	}
}

// TestFixpoint feeds each response's status back into the parent: syncing
// again with the same observed world must answer exactly the same.
func TestFixpoint(t *testing.T) {
	for _, dir := range caseDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			req, h := loadCase(t, dir)
			first, err := h.Answer(context.Background(), req)
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			withStatus(t, req, first.Status)
			second, err := h.Answer(context.Background(), req)
			if err != nil {
				t.Fatalf("second sync: %v", err)
			}
			if diff := cmp.Diff(asJSON(t, first), asJSON(t, second)); diff != "" {
				t.Errorf("second sync differs (-first +second):\n%s", diff)
			}
		})
	}
}

// TestLaterSyncSameStatus syncs again 30 seconds later with nothing
// observed changed: only resyncAfterSeconds may differ.
func TestLaterSyncSameStatus(t *testing.T) {
	for _, dir := range caseDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if readWorld(t, dir).TimeSensitive {
				t.Skip("status changes with time by design")
			}
			req, h := loadCase(t, dir)
			first, err := h.Answer(context.Background(), req)
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			withStatus(t, req, first.Status)
			later := h.Now().Add(30 * time.Second)
			h.Now = func() time.Time { return later }
			second, err := h.Answer(context.Background(), req)
			if err != nil {
				t.Fatalf("later sync: %v", err)
			}
			if diff := cmp.Diff(asJSON(t, first.Status), asJSON(t, second.Status)); diff != "" {
				t.Errorf("status 30 s later differs (-first +later):\n%s", diff)
			}
			if diff := cmp.Diff(asJSON(t, first.Children), asJSON(t, second.Children)); diff != "" {
				t.Errorf("children 30 s later differ (-first +later):\n%s", diff)
			}
		})
	}
}

func caseDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(casesDir, "*", "request.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases in %s: %v", casesDir, err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
		if _, err := os.Stat(filepath.Join(dirs[i], "description.txt")); err != nil {
			t.Errorf("case %s has no description.txt", dirs[i])
		}
	}
	return dirs
}

func loadCase(t testing.TB, dir string) (*hook.SyncRequest, *Handler) {
	t.Helper()
	cfg, err := config.Load(caseConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(dir, "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := hook.DecodeSyncRequest(body)
	if err != nil {
		t.Fatalf("request.json: %v", err)
	}
	w := readWorld(t, dir)
	now := defaultNow
	if w.Now != nil {
		now = *w.Now
	}
	h := &Handler{Config: cfg, Script: testScript, FlatScript: testFlatScript, Actors: noOtherActors{}, Secrets: secretsExist{}, Now: func() time.Time { return now },
		Transports: scripted.New(w.Transport)}
	return req, h
}

// caseConfig is the case's own config.yaml if it has one, else the one
// all cases share.
func caseConfig(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err == nil {
		return filepath.Join(dir, "config.yaml")
	}
	return filepath.Join(casesDir, "config.yaml")
}

func readWorld(t testing.TB, dir string) world {
	t.Helper()
	var w world
	data, err := os.ReadFile(filepath.Join(dir, "world.json"))
	if os.IsNotExist(err) {
		return w
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatalf("world.json: %v", err)
	}
	return w
}

// withStatus gives the request's parent status, as Metacontroller would
// have written it.
func withStatus(t *testing.T, req *hook.SyncRequest, status any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(req.Parent, &m); err != nil {
		t.Fatal(err)
	}
	m["status"] = asJSON(t, status)
	parent, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	req.Parent = parent
	if req.Actor, req.SpecError, err = hook.DecodeParent(parent, req.Related.FoundFlavors()); err != nil {
		t.Fatal(err)
	}
}

// withChildObjects is resp with its children as JSON objects, their
// members sorted as the golden files keep them. A child is written in
// the order of its Go fields: each must be written as its object.
func withChildObjects(t *testing.T, resp *hook.Response) *hook.Response {
	t.Helper()
	out := *resp
	out.Children = make([]hook.Child, len(resp.Children))
	for i, c := range resp.Children {
		obj, err := c.Object()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(asJSON(t, obj), asJSON(t, c)); diff != "" {
			t.Errorf("child %d is written otherwise than its object (-object +written):\n%s", i, diff)
		}
		out.Children[i] = hook.Kept(obj)
	}
	return &out
}

// asJSON normalizes a value to its JSON form for comparison.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
