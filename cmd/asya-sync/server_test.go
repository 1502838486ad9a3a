package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/asya-sh/asya-sync/config"
	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport"
)

const testConfig = `
transports:
  rabbitmq: {type: rabbitmq, config: {host: mq, passwordSecretRef: {name: mq-secret, key: password}}}
`

func newTestServer(t testing.TB, maxBody int64) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(newTestService(t, maxBody).routes())
	t.Cleanup(ts.Close)
	return ts
}

// newTestService is the HTTP shell with no open broker.
func newTestService(t testing.TB, maxBody int64) *server {
	t.Helper()
	cfg, err := config.Parse([]byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	s := &server{
		// No transports: these tests are about HTTP; queues are tested
		// against real brokers in transport/.
		hooks:   &hooksync.Handler{Config: cfg, Script: asyaruntime.Embedded(), Now: now},
		log:     zerolog.New(io.Discard),
		metrics: newMetrics(),
		maxBody: maxBody,
	}
	return s
}

const actorJSON = `{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"echo","namespace":"ml"},
 "spec":{"transport":"rabbitmq","workload":{"template":{"spec":{"containers":[{"name":"asya-runtime","image":"python:3.12"}]}}}}}`

func TestBadRequests(t *testing.T) {
	ts := newTestServer(t, 1<<20)
	tests := []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"not JSON", "/sync", "{not json", 400, "invalid request JSON"},
		{"empty body", "/sync", "", 400, "empty request body"},
		{"JSON array", "/sync", "[]", 400, "not a JSON object"},
		{"no parent", "/sync", `{"children":{}}`, 400, "request has no parent"},
		{"parent of another kind", "/sync", `{"parent":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}}`, 400, `parent is apps/v1 "Deployment"`},
		{"parent without name", "/finalize", `{"parent":{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{}}}`, 400, "no metadata.name"},
		{"children of wrong shape", "/sync", `{"parent":` + actorJSON + `,"children":{"Deployment.apps/v1":[1]}}`, 400, "invalid request JSON"},
		{"customize without parent", "/customize", `{}`, 400, "request has no parent"},
		// Found by FuzzCustomizeRequest: answered 500 before.
		{"parent metadata of wrong shape", "/customize", `{"parent":{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"x","creationTimestamp":{}}}}`, 400, "parent: "},
		{"parent status of wrong shape", "/finalize", `{"parent":{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"x"},"status":{"replicas":"many"}}}`, 400, "parent: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, ts.URL+tt.path, tt.body)
			if code != tt.code || !strings.Contains(body["error"].(string), tt.want) {
				t.Errorf("got %d %v, want %d with error containing %q", code, body, tt.code, tt.want)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	ts := newTestServer(t, 1024)
	code, body := post(t, ts.URL+"/sync", `{"parent":`+actorJSON+`,"pad":"`+strings.Repeat("x", 2048)+`"}`)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body["error"].(string), "exceeds 1024 bytes") {
		t.Errorf("got %d %v, want 413", code, body)
	}
}

func TestSyncAnswersInvalidActorWith200(t *testing.T) {
	ts := newTestServer(t, 1<<20)
	bad := strings.Replace(actorJSON, `"asya-runtime"`, `"app"`, 1)
	code, body := post(t, ts.URL+"/sync", `{"parent":`+bad+`,"children":{}}`)
	if code != http.StatusOK {
		t.Fatalf("got %d %v, want 200", code, body)
	}
	status := body["status"].(map[string]any)
	if status["status"] != "WorkloadError" {
		t.Errorf("status = %v, want WorkloadError", status["status"])
	}
	if kids := body["children"].([]any); len(kids) != 0 {
		t.Errorf("children = %v, want none for an invalid actor with nothing observed", kids)
	}
}

func TestCustomize(t *testing.T) {
	ts := newTestServer(t, 1<<20)
	code, body := post(t, ts.URL+"/customize", `{"parent":`+actorJSON+`}`)
	if code != http.StatusOK {
		t.Fatalf("got %d %v", code, body)
	}
	got, _ := json.Marshal(body["relatedResources"])
	// No pods, Secrets or actors: the service reads them itself
	// (watch.pods whileUnhealthy, watch.secrets read, watch.namesakes read).
	want := `[{"apiVersion":"v1","names":["ml"],"resource":"namespaces"}]`
	if string(got) != want {
		t.Errorf("relatedResources =\n%s\nwant\n%s", got, want)
	}
}

func TestProbesAndMetrics(t *testing.T) {
	ts := newTestServer(t, 1<<20)
	post(t, ts.URL+"/sync", `{"parent":`+actorJSON+`}`)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", path, resp, err)
		}
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(text), `asya_sync_hook_calls_total{code="200",hook="sync"`) {
		t.Errorf("metrics lack the sync call:\n%s", text)
	}
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("response is not JSON: %v", err)
	}
	return resp.StatusCode, out
}

// noBrokers has no open broker for any transport.
type noBrokers struct{}

func (noBrokers) Get(string) (transport.Broker, bool) { return nil, false }

func TestSyncWhileFinalizingTearsDown(t *testing.T) {
	ts := newTestServer(t, 1<<20)
	deleting := strings.Replace(actorJSON, `"namespace":"ml"`, `"namespace":"ml","deletionTimestamp":"2026-01-01T00:00:00Z"`, 1)
	// An unknown transport has no queue to delete: finalized at once.
	deleting = strings.Replace(deleting, `"transport":"rabbitmq"`, `"transport":"gone"`, 1)
	code, body := post(t, ts.URL+"/sync", `{"parent":`+deleting+`,"children":{},"finalizing":true}`)
	if code != http.StatusOK || body["finalized"] != true || len(body["children"].([]any)) != 0 {
		t.Errorf("got %d %v, want 200, finalized and no children", code, body)
	}
}

// TestETag: every answer names its body; a caller holding that very answer
// gets 304 and no body, any other tag the full answer.
func TestETag(t *testing.T) {
	ts := newTestServer(t, 1<<20)
	sync := `{"parent":` + actorJSON + `}`
	call := func(path, body, ifNoneMatch string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, data
	}
	first, body := call("/sync", sync, "")
	tag := first.Header.Get("ETag")
	if first.StatusCode != http.StatusOK || tag != etag(body) {
		t.Fatalf("first sync: %d, ETag %q, want 200 and %q", first.StatusCode, tag, etag(body))
	}
	tests := []struct {
		name, path, body, ifNoneMatch string
		code                          int
	}{
		{"same answer", "/sync", sync, tag, http.StatusNotModified},
		{"another answer held", "/sync", sync, `"0123"`, http.StatusOK},
		{"customize, sync's tag", "/customize", sync, tag, http.StatusOK},
		{"bad request", "/sync", "{}", etag([]byte(`{"error":"request has no parent"}` + "\n")), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, data := call(tt.path, tt.body, tt.ifNoneMatch)
			if resp.StatusCode != tt.code {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tt.code, data)
			}
			if tt.code == http.StatusNotModified {
				if len(data) != 0 || resp.Header.Get("ETag") != tag {
					t.Errorf("304 with body %q and ETag %q, want none and %q", data, resp.Header.Get("ETag"), tag)
				}
				return
			}
			if got := resp.Header.Get("ETag"); got != etag(data) {
				t.Errorf("ETag %q, want the body's %q", got, etag(data))
			}
		})
	}
}
