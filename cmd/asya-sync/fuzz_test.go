package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/golden"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport"
)

// The fuzz targets feed arbitrary input through the HTTP handler, the way a
// hook call arrives. No input may panic, hang, or get an answer that is not
// JSON. Seeds are the golden requests (testdata/fuzz, written by
// TestFuzzSeeds with -update); crashers found later are added there too.

func FuzzSyncRequest(f *testing.F)      { fuzzHook(f, "/sync") }
func FuzzFinalizeRequest(f *testing.F)  { fuzzHook(f, "/finalize") }
func FuzzCustomizeRequest(f *testing.F) { fuzzHook(f, "/customize") }

func fuzzHook(f *testing.F, path string) {
	h := newFuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, h, path, body)
	})
}

// FuzzWholeSync runs a whole sync (or, with finalizing, a teardown) on an
// arbitrary parent, children and related objects, each valid JSON, against
// a broker that accepts everything, so that every input reaches the
// planning and status code rather than stopping at the decoder.
func FuzzWholeSync(f *testing.F) {
	h := newFuzzHandler(f)
	f.Fuzz(func(t *testing.T, parent, children, related []byte, finalizing bool) {
		for _, part := range [][]byte{parent, children, related} {
			if !json.Valid(part) {
				t.Skip("not JSON: FuzzSyncRequest covers undecodable bodies")
			}
		}
		body := fmt.Sprintf(`{"parent":%s,"children":%s,"related":%s,"finalizing":%t}`, parent, children, related, finalizing)
		checkAnswer(t, h, "/sync", []byte(body))
	})
}

// checkAnswer posts body and requires a JSON answer with a code the hook
// protocol allows, within a bound far below Metacontroller's timeout.
func checkAnswer(t *testing.T, h http.Handler, path string, body []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("POST %s hung on %q", path, body)
	}
	switch rec.Code {
	case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
	default:
		t.Fatalf("POST %s: HTTP %d %s", path, rec.Code, rec.Body)
	}
	var answer map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		t.Fatalf("POST %s: answer is not a JSON object: %v: %q", path, err, rec.Body)
	}
	if rec.Code != http.StatusOK {
		if msg, _ := answer["error"].(string); msg == "" {
			t.Fatalf("POST %s: HTTP %d without an error message: %s", path, rec.Code, rec.Body)
		}
	}
}

func newFuzzHandler(f *testing.F) http.Handler {
	f.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", "testdata", "sync", "config.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	s := &server{
		hooks:   &hooksync.Handler{Config: cfg, Transports: acceptAll{}, Script: asyaruntime.Embedded(), Now: now},
		log:     zerolog.New(io.Discard),
		metrics: newMetrics(),
		maxBody: 1 << 20,
	}
	return s.routes()
}

// acceptAll is a broker on which every queue exists and is empty.
type acceptAll struct{}

func (acceptAll) Get(string) (transport.Broker, bool)           { return acceptAll{}, true }
func (acceptAll) Ensure(context.Context, transport.Queue) error { return nil }
func (acceptAll) Delete(context.Context, transport.Queue) error { return nil }
func (acceptAll) Counts(context.Context, transport.Queue) (transport.Counts, error) {
	return transport.Counts{}, nil
}
func (acceptAll) Close() error { return nil }

// TestFuzzSeeds keeps the checked-in seed corpus equal to what the golden
// requests give (go test -update rewrites it): each request whole for the
// hook targets, and split into parent, children and related for
// FuzzWholeSync. Requests over maxSeed bytes (the benchmark's realistic
// request) are left out: the fuzzer mutates small inputs far faster, and
// the golden cases already cover every shape they hold.
const maxSeed = 64 << 10

func TestFuzzSeeds(t *testing.T) {
	requests, err := filepath.Glob(filepath.Join("..", "..", "testdata", "sync", "*", "request.json"))
	if err != nil || len(requests) == 0 {
		t.Fatalf("no golden requests: %v", err)
	}
	for _, path := range requests {
		name := "golden-" + filepath.Base(filepath.Dir(path))
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) > maxSeed {
			continue
		}
		whole := corpusFile(body)
		for _, target := range []string{"FuzzSyncRequest", "FuzzFinalizeRequest", "FuzzCustomizeRequest"} {
			golden.Bytes(t, filepath.Join("testdata", "fuzz", target, name), whole)
		}
		var req struct {
			Parent, Children, Related json.RawMessage
			Finalizing                bool
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		golden.Bytes(t, filepath.Join("testdata", "fuzz", "FuzzWholeSync", name),
			corpusFile(orNull(req.Parent), orNull(req.Children), orNull(req.Related), req.Finalizing))
	}
}

func orNull(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	return raw
}

// corpusFile writes values in the format of go test's fuzz corpus files.
func corpusFile(values ...any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case bool:
			fmt.Fprintf(&b, "bool(%t)\n", v)
		}
	}
	return b.Bytes()
}
