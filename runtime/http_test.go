package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const httpTestHandlers = `
import time


def echo(p):
    return p


def none(p):
    return None


def boom(p):
    raise ValueError("boom")


def frames(p):
    for i in range(p["n"]):
        yield {"i": i}
    yield "FLY", {"token": "t"}


def timed(p):
    """Reports its own time, so that a caller can tell the runtime's."""
    start = time.perf_counter_ns()
    if p.get("sleep_ms"):
        time.sleep(p["sleep_ms"] / 1000)
    return {"handler_ns": time.perf_counter_ns() - start}


def timed_gen(p):
    start = time.perf_counter_ns()
    yield {"handler_ns": time.perf_counter_ns() - start}
`

// startHTTPScript runs the embedded HTTP script with the test handlers.
func startHTTPScript(tb testing.TB, handler string, env ...string) *runningScript {
	tb.Helper()
	return launch(tb, EmbeddedHTTP(), httpTestHandlers, handler, append([]string{"ASYA_LOG_LEVEL=WARNING"}, env...)...)
}

// sidecarClient is built as the sidecar's runtime client builds its own
// (internal/runtime/client.go upstream): a plain http.Client whose
// transport dials the Unix socket. The runtime closes each connection after
// its answer, so every call dials anew.
func sidecarClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

// invokeResult is what the sidecar reads out of a frame or an error answer.
type invokeResult struct {
	Payload json.RawMessage `json:"payload"`
	Route   struct {
		Prev []string `json:"prev"`
		Curr string   `json:"curr"`
		Next []string `json:"next"`
	} `json:"route"`
	Headers map[string]json.RawMessage `json:"headers"`
	Error   string                     `json:"error"`
	Details struct {
		Message   string   `json:"message"`
		Type      string   `json:"type"`
		MRO       []string `json:"mro"`
		Traceback string   `json:"traceback"`
	} `json:"details"`
}

func invoke(t testing.TB, c *http.Client, body []byte) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/invoke", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

func envelopeJSON(payload string) []byte {
	return []byte(`{"id": "m-1", "route": {"prev": [], "curr": "a", "next": ["b", "c"]},
		"headers": {"trace_id": "t-9"}, "payload": ` + payload + `,
		"status": {"phase": "processing", "actor": "a", "attempt": 1, "max_attempts": 1,
		"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}}`)
}

// sseEvents reads an event stream as the sidecar does: "event: " and
// "data: " lines, an empty line ending each event.
func sseEvents(t *testing.T, body io.Reader) (names []string, data []string) {
	t.Helper()
	sc := bufio.NewScanner(body)
	var name string
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			lines = append(lines, line[len("data: "):])
		case line == "" && name != "":
			names, data = append(names, name), append(data, strings.Join(lines, "\n"))
			name, lines = "", nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names, data
}

func TestHTTPScriptAnswersTheSidecarsClient(t *testing.T) {
	t.Parallel()
	rs := startHTTPScript(t, "handlers.echo")
	c := sidecarClient(rs.socket)

	resp, raw := invoke(t, c, envelopeJSON(`{"x": 1}`))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	var got struct{ Frames []invokeResult }
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Frames) != 1 {
		t.Fatalf("got %d frames: %s", len(got.Frames), raw)
	}
	f := got.Frames[0]
	if string(f.Payload) != `{"x":1}` || f.Route.Curr != "b" || strings.Join(f.Route.Prev, ",") != "a" ||
		strings.Join(f.Route.Next, ",") != "c" || string(f.Headers["trace_id"]) != `"t-9"` {
		t.Errorf("frame = %s", raw)
	}

	for i := 0; i < 3; i++ { // a fresh connection every call
		if resp, raw := invoke(t, c, envelopeJSON(fmt.Sprint(i))); resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, raw)
		}
	}
}

func TestHTTPScriptAnswerCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		handler string
		status  int
		errType string
	}{
		{"handlers.none", http.StatusNoContent, ""},
		{"handlers.boom", http.StatusInternalServerError, "ValueError"},
	} {
		t.Run(tc.handler, func(t *testing.T) {
			t.Parallel()
			rs := startHTTPScript(t, tc.handler)
			resp, raw := invoke(t, sidecarClient(rs.socket), envelopeJSON(`{}`))
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw)
			}
			if tc.errType == "" {
				if len(raw) != 0 {
					t.Errorf("body %q, want none", raw)
				}
				return
			}
			var got invokeResult
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.Error != "processing_error" || got.Details.Type != tc.errType ||
				strings.Join(got.Details.MRO, ",") != "Exception" || !strings.Contains(got.Details.Traceback, "boom") {
				t.Errorf("answer = %s", raw)
			}
		})
	}
}

func TestHTTPScriptStreamsGenerators(t *testing.T) {
	t.Parallel()
	rs := startHTTPScript(t, "handlers.frames")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/invoke",
		bytes.NewReader(envelopeJSON(`{"n": 3}`)))
	resp, err := sidecarClient(rs.socket).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	names, data := sseEvents(t, resp.Body)
	if want := "downstream downstream downstream upstream done"; strings.Join(names, " ") != want {
		t.Fatalf("events %v, want %s", names, want)
	}
	for i := 0; i < 3; i++ {
		var f invokeResult
		if err := json.Unmarshal([]byte(data[i]), &f); err != nil {
			t.Fatal(err)
		}
		if string(f.Payload) != fmt.Sprintf(`{"i":%d}`, i) || f.Route.Curr != "b" {
			t.Errorf("frame %d = %s", i, data[i])
		}
	}
	if data[3] != `{"payload":{"token":"t"}}` {
		t.Errorf("upstream = %s", data[3])
	}
}

// The Go transport writes the whole body while it waits for the answer: a
// body over the limit must still come back as a 413, not a write error.
func TestHTTPScriptRefusesABodyOverTheLimit(t *testing.T) {
	t.Parallel()
	rs := startHTTPScript(t, "handlers.echo", "ASYA_MAX_MESSAGE_SIZE=1024")
	c := sidecarClient(rs.socket)
	big := envelopeJSON(`"` + strings.Repeat("x", 8<<20) + `"`)
	resp, raw := invoke(t, c, big)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %.200s", resp.StatusCode, raw)
	}
	var got invokeResult
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Error != "msg_parsing_error" || !strings.Contains(got.Details.Message, "ASYA_MAX_MESSAGE_SIZE") {
		t.Errorf("answer = %s", raw)
	}
	if resp, raw := invoke(t, c, envelopeJSON(`1`)); resp.StatusCode != http.StatusOK {
		t.Errorf("after a 413: %d %s", resp.StatusCode, raw)
	}
}

// BenchmarkHTTPRoundTrip measures sidecar-to-runtime round trips as the
// sidecar makes them: one connection per call, an envelope POSTed to
// /invoke. Each handler reports its own time, so overhead-p50-ms is what
// the runtime (and the client) add over the handler: the round trip less
// the handler's time, per call. The go-floor cases answer from a Go server
// doing the same work in the same way: what the client, the kernel and the
// machine's scheduling cost without the runtime.
//
//	go test ./runtime/ -run '^$' -bench HTTPRoundTrip -benchtime 2000x
func BenchmarkHTTPRoundTrip(b *testing.B) {
	text := strings.Repeat("x", 512)
	for _, bc := range []struct {
		name, handler, payload string
	}{
		{"function", "handlers.timed", `{"sleep_ms": 0, "text": "` + text + `"}`},
		{"function-5ms", "handlers.timed", `{"sleep_ms": 5, "text": "` + text + `"}`},
		{"generator", "handlers.timed_gen", `{"text": "` + text + `"}`},
		{"go-floor", "", `{"sleep_ms": 0, "text": "` + text + `"}`},
		{"go-floor-5ms", "", `{"sleep_ms": 5, "text": "` + text + `"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var socket string
			if bc.handler == "" {
				socket = startFloor(b)
			} else {
				socket = startHTTPScript(b, bc.handler).socket
			}
			c := sidecarClient(socket)
			body := envelopeJSON(bc.payload)
			trips := make([]time.Duration, 0, b.N)
			overheads := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				handlerNS := roundTrip(b, c, body)
				trip := time.Since(start)
				trips = append(trips, trip)
				overheads = append(overheads, trip-time.Duration(handlerNS))
			}
			b.StopTimer()
			b.ReportMetric(msAt(trips, 0.5), "trip-p50-ms")
			b.ReportMetric(msAt(overheads, 0.5), "overhead-p50-ms")
			b.ReportMetric(msAt(overheads, 0.99), "overhead-p99-ms")
		})
	}
}

// startFloor serves /invoke from Go as the runtime does for handlers.timed:
// decode the envelope, run the handler (sleep_ms), answer the shifted frame
// and close the connection.
func startFloor(b *testing.B) string {
	dir, err := os.MkdirTemp("", "asya")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "floor.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Route struct {
				Prev []string `json:"prev"`
				Curr string   `json:"curr"`
				Next []string `json:"next"`
			} `json:"route"`
			Headers map[string]any `json:"headers"`
			Status  map[string]any `json:"status"`
			Payload struct {
				SleepMS int `json:"sleep_ms"`
			} `json:"payload"`
		}
		if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		start := time.Now()
		time.Sleep(time.Duration(env.Payload.SleepMS) * time.Millisecond)
		handlerNS := time.Since(start).Nanoseconds()
		frame := map[string]any{
			"payload": map[string]any{"handler_ns": handlerNS},
			"route":   map[string]any{"prev": append(env.Route.Prev, env.Route.Curr), "curr": env.Route.Next[0], "next": env.Route.Next[1:]},
			"headers": env.Headers,
			"status":  env.Status,
		}
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"frames": []any{frame}})
	})}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	return socket
}

// roundTrip makes one call and returns the handler's own time, read from
// the JSON frames or the event stream.
func roundTrip(b *testing.B, c *http.Client, body []byte) int64 {
	req, _ := http.NewRequest(http.MethodPost, "http://localhost/invoke", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d, %v: %s", resp.StatusCode, err, raw)
	}
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 { // a stream: its first frame
		raw = raw[i+len("data: "):]
		raw = raw[:bytes.IndexByte(raw, '\n')]
	} else {
		var batch struct{ Frames []json.RawMessage }
		if err := json.Unmarshal(raw, &batch); err != nil || len(batch.Frames) != 1 {
			b.Fatalf("answer %s: %v", raw, err)
		}
		raw = batch.Frames[0]
	}
	var frame struct {
		Payload struct {
			HandlerNS int64 `json:"handler_ns"`
		}
	}
	if err := json.Unmarshal(raw, &frame); err != nil {
		b.Fatalf("frame %s: %v", raw, err)
	}
	return frame.Payload.HandlerNS
}

func msAt(ds []time.Duration, q float64) float64 {
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Millisecond)
}
