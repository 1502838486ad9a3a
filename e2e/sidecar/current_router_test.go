package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeHTTPRuntime serves handler on a runtime socket in a new directory,
// which it returns.
func fakeHTTPRuntime(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	dir, l := listenRuntime(t)
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return dir
}

// sent is one message a fake transport was given.
type sent struct {
	actor string
	env   map[string]any
}

// fakeQueues is a transport in memory. Like SQS it fails every call
// whose context has ended; failSend fails the sends to that actor.
type fakeQueues struct {
	mu             sync.Mutex
	sends          []sent
	acks, requeues int
	failSend       string
	// delayed are the delayed sends, held back for delays; noDelay makes
	// them fail as RabbitMQ's do.
	delayed []sent
	delays  []time.Duration
	noDelay bool
}

func (f *fakeQueues) receive(ctx context.Context) (*message, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (f *fakeQueues) send(ctx context.Context, actor string, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if actor == f.failSend {
		return errors.New("queue does not exist")
	}
	var env map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("sent no JSON: %v: %s", err, body)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends = append(f.sends, sent{actor, env})
	return nil
}

func (f *fakeQueues) sendDelayed(ctx context.Context, actor string, body []byte, delay time.Duration) error {
	if f.noDelay {
		return errDelayNotSupported
	}
	if err := f.send(ctx, actor, body); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delayed, f.delays = append(f.delayed, f.sends[len(f.sends)-1]), append(f.delays, delay)
	f.sends = f.sends[:len(f.sends)-1]
	return nil
}

func (f *fakeQueues) ack(ctx context.Context, _ *message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.acks++
	return nil
}

func (f *fakeQueues) requeue(ctx context.Context, _ *message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.requeues++
	return nil
}

func (f *fakeQueues) stopReceiving() error { return nil }
func (f *fakeQueues) close() error         { return nil }

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// currentTestRouter is a router of actor "a" in namespace "ns", on a fake
// runtime serving handler.
func currentTestRouter(t *testing.T, handler http.HandlerFunc) (*currentRouter, *fakeQueues) {
	t.Helper()
	cfg := config{
		Actor: "a", HappyEnd: "x-sink", ErrorEnd: "x-sump", RuntimeTimeout: 5 * time.Second, Transport: "rabbitmq",
		SocketDir: fakeHTTPRuntime(t, handler), Current: &currentConfig{Namespace: "ns", ReadyTimeout: time.Second},
	}
	q := &fakeQueues{}
	r := newCurrentRouter(cfg, q, testLogger(t))
	r.now = func() time.Time { return testNow }
	return r, q
}

// jsonAnswer answers with the status and body.
func jsonAnswer(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// sseAnswer streams the events, each "name data".
func sseAnswer(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			name, data, _ := strings.Cut(e, " ")
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
			w.(http.Flusher).Flush()
		}
	}
}

const (
	inEnvelope = `{"id":"m","route":{"prev":["p"],"curr":"a","next":["b"]},"headers":{"trace":"t"},` +
		`"payload":{"x":1},"status":{"phase":"pending","actor":"a","attempt":1,"max_attempts":1,` +
		`"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"},"extra":"dropped"}`
	toB    = `{"payload":{"y":2},"route":{"prev":["p","a"],"curr":"b","next":[]}}`
	toSink = `{"payload":{"y":3},"route":{"prev":["p","a","b"],"curr":"","next":[]}}`
	failed = `{"error":"processing_error","details":{"message":"boom","type":"ValueError",` +
		`"mro":["ValueError","Exception"],"traceback":"Traceback (most recent call last):\n  File \"h.py\"\nValueError: boom\n"}}`
	badRequest = `{"error":"msg_parsing_error","details":{"message":"route.curr must be a string","type":"ValueError"}}`
)

// statusAt is the status this router stamps, phase and all.
func statusAt(phase, reason, actor string, created string) map[string]any {
	s := map[string]any{"phase": phase, "actor": actor, "attempt": 1.0, "max_attempts": 1.0,
		"created_at": created, "updated_at": testNow.Format(time.RFC3339)}
	if reason != "" {
		s["reason"] = reason
	}
	return s
}

const created = "2026-01-01T00:00:00Z"

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestCurrentRouterRoutes(t *testing.T) {
	route := func(prev []any, curr string, next []any) map[string]any {
		return map[string]any{"prev": prev, "curr": curr, "next": next}
	}
	asCame := route([]any{"p"}, "a", []any{"b"})
	headers := map[string]any{"trace": "t"}
	sumpPayload := map[string]any{"error": "processing_error", "original_payload": map[string]any{"x": 1.0},
		"details": map[string]any{"message": "boom", "type": "ValueError", "mro": []any{"ValueError", "Exception"},
			"traceback": "Traceback (most recent call last):\n  File \"h.py\"\nValueError: boom\n"}}
	sumpStatus := statusAt("failed", "RuntimeError", "a", created)
	sumpStatus["error"] = map[string]any{"message": "boom", "type": "ValueError", "mro": []any{"ValueError", "Exception"},
		"traceback": "Traceback (most recent call last):\n  File \"h.py\"\nValueError: boom\n"}
	tests := []struct {
		name    string
		in      string
		runtime http.HandlerFunc
		want    []sent
		what    string
	}{
		{
			name: "a function's frame to the next actor", in: inEnvelope, runtime: jsonAnswer(200, `{"frames":[`+toB+`]}`),
			want: []sent{{"b", map[string]any{"id": "m", "route": route([]any{"p", "a"}, "b", []any{}), "headers": headers,
				"payload": map[string]any{"y": 2.0}, "status": statusAt("pending", "", "b", created)}}},
			what: "routed",
		},
		{
			name: "a frame past the route's end to the sink", in: inEnvelope, runtime: jsonAnswer(200, `{"frames":[`+toSink+`]}`),
			want: []sent{{"x-sink", map[string]any{"id": "m", "route": route([]any{"p", "a", "b"}, "", []any{}), "headers": headers,
				"payload": map[string]any{"y": 3.0}, "status": statusAt("succeeded", "Completed", "a", created)}}},
			what: "routed",
		},
		{
			name: "the frame's headers replace the envelope's", in: inEnvelope,
			runtime: jsonAnswer(200, `{"frames":[{"payload":1,"route":{"prev":["a"],"curr":"b","next":[]},"headers":{"k":[1]}}]}`),
			want: []sent{{"b", map[string]any{"id": "m", "route": route([]any{"a"}, "b", []any{}), "headers": map[string]any{"k": []any{1.0}},
				"payload": 1.0, "status": statusAt("pending", "", "b", created)}}},
			what: "routed",
		},
		{
			name: "204 sends the envelope to the sink", in: inEnvelope,
			runtime: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
			want: []sent{{"x-sink", map[string]any{"id": "m", "route": asCame, "headers": headers,
				"payload": map[string]any{"x": 1.0}, "status": statusAt("succeeded", "Completed", "a", created)}}},
			what: "empty",
		},
		{
			name: "500 to the sump with type, mro and traceback", in: inEnvelope, runtime: jsonAnswer(500, failed),
			want: []sent{{"x-sump", map[string]any{"id": "m", "route": asCame, "payload": sumpPayload, "status": sumpStatus}}},
			what: "error",
		},
		{
			name: "400 to the sump", in: inEnvelope, runtime: jsonAnswer(400, badRequest),
			want: []sent{{"x-sump", map[string]any{"id": "m", "route": asCame,
				"payload": map[string]any{"error": "msg_parsing_error", "original_payload": map[string]any{"x": 1.0},
					"details": map[string]any{"message": "route.curr must be a string", "type": "ValueError"}},
				"status": func() map[string]any {
					s := statusAt("failed", "RuntimeError", "a", created)
					s["error"] = map[string]any{"message": "route.curr must be a string", "type": "ValueError"}
					return s
				}()}}},
			what: "error",
		},
		{
			name: "a stream's frames, then its error", in: inEnvelope,
			runtime: sseAnswer("downstream "+toB, "upstream {\"payload\":\"progress\"}", "error "+failed, "done {}"),
			want: []sent{
				{"b", map[string]any{"id": "m", "route": route([]any{"p", "a"}, "b", []any{}), "headers": headers,
					"payload": map[string]any{"y": 2.0}, "status": statusAt("pending", "", "b", created)}},
				{"x-sump", map[string]any{"id": "m", "route": asCame, "payload": sumpPayload, "status": sumpStatus}},
			},
			what: "error",
		},
		{
			name: "no runtime on the socket: to the sump", in: inEnvelope,
			runtime: nil, // replaced below by a socket nobody serves
			want: []sent{{"x-sump", map[string]any{"id": "m", "route": asCame,
				"payload": map[string]any{"error": "<dial error>", "original_payload": map[string]any{"x": 1.0}},
				"status":  map[string]any{"phase": "failed", "actor": "a", "attempt": 1.0, "max_attempts": 1.0, "created_at": created, "updated_at": testNow.Format(time.RFC3339)}}}},
			what: "error",
		},
		{
			name: "not JSON", in: `nope`, runtime: jsonAnswer(500, failed),
			want: []sent{{"x-sump", map[string]any{"id": "", "route": route([]any{}, "x-sump", []any{}),
				"payload": map[string]any{"error": "Failed to parse message: invalid character 'o' in literal null (expecting 'u')"},
				"status":  map[string]any{"phase": "failed", "actor": "a", "attempt": 1.0, "max_attempts": 1.0, "created_at": testNow.Format(time.RFC3339), "updated_at": testNow.Format(time.RFC3339)}}}},
			what: "error",
		},
		{
			name: "no id", in: `{"route":{"prev":[],"curr":"a","next":[]},"payload":1,"parent_id":"root"}`, runtime: jsonAnswer(500, failed),
			want: []sent{{"x-sump", map[string]any{"id": "", "parent_id": "root", "route": route([]any{}, "a", []any{}),
				"payload": map[string]any{"error": "Message missing required 'id' field", "original_payload": 1.0},
				"status":  map[string]any{"phase": "failed", "actor": "a", "attempt": 1.0, "max_attempts": 1.0, "created_at": testNow.Format(time.RFC3339), "updated_at": testNow.Format(time.RFC3339)}}}},
			what: "error",
		},
		{
			name: "another actor's message", in: `{"id":"m","route":{"prev":[],"curr":"z","next":[]},"payload":1,"status":{"actor":"y","created_at":"c"}}`,
			runtime: jsonAnswer(500, failed),
			want: []sent{{"x-sump", map[string]any{"id": "m", "route": route([]any{}, "z", []any{}),
				"payload": map[string]any{"error": "Route mismatch: message routed to wrong actor (expected: a, actual: z)", "original_payload": 1.0},
				"status":  map[string]any{"phase": "failed", "actor": "y", "attempt": 1.0, "max_attempts": 1.0, "created_at": "c", "updated_at": testNow.Format(time.RFC3339)}}}},
			what: "error",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, q := currentTestRouter(t, tc.runtime)
			if tc.runtime == nil {
				r.rt = newHTTPRuntime(filepath.Join(t.TempDir(), socketName))
			}
			if err := r.handle(context.Background(), &message{Body: []byte(tc.in)}); err != nil {
				t.Fatal(err)
			}
			if q.acks != 1 || q.requeues != 0 {
				t.Errorf("%d acks, %d requeues, want the message acknowledged", q.acks, q.requeues)
			}
			got := q.sends
			if tc.runtime == nil && len(got) == 1 {
				p := got[0].env["payload"].(map[string]any)
				if msg, _ := p["error"].(string); strings.HasPrefix(msg, "failed to send request to runtime: ") {
					p["error"] = "<dial error>"
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(sent{})); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCurrentRouterRequest: the runtime gets POST /invoke with the
// envelope as the real sidecar sends it: status processing for this
// actor, nothing it does not know of.
func TestCurrentRouterRequest(t *testing.T) {
	var got map[string]any
	var method, path, ctype string
	r, _ := currentTestRouter(t, func(w http.ResponseWriter, r *http.Request) {
		method, path, ctype = r.Method, r.URL.Path, r.Header.Get("Content-Type")
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.WriteHeader(http.StatusNoContent)
	})
	for _, tc := range []struct{ in, wantStatus string }{
		{inEnvelope, `{"phase":"processing","actor":"a","attempt":1,"max_attempts":1,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-03-01T12:00:00Z"}`},
		{`{"id":"m","route":{"prev":[],"curr":"a","next":[]},"payload":null,"status":{"phase":"retrying","reason":"r","actor":"z","attempt":3,"max_attempts":5,"created_at":"c","updated_at":"u","deadline_at":"d","error":{"message":"e"}}}`,
			`{"phase":"processing","actor":"a","attempt":1,"max_attempts":1,"created_at":"c","updated_at":"2026-03-01T12:00:00Z","deadline_at":"d"}`},
		{`{"id":"m","route":{"prev":[],"curr":"a","next":[]},"payload":1}`,
			`{"phase":"processing","actor":"a","attempt":1,"max_attempts":1,"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z"}`},
	} {
		if err := r.handle(context.Background(), &message{Body: []byte(tc.in)}); err != nil {
			t.Fatal(err)
		}
		if method != http.MethodPost || path != "/invoke" || ctype != "application/json" {
			t.Errorf("request %s %s (%s), want POST /invoke (application/json)", method, path, ctype)
		}
		var want map[string]any
		_ = json.Unmarshal([]byte(tc.wantStatus), &want)
		if diff := cmp.Diff(want, got["status"]); diff != "" {
			t.Errorf("status the runtime got (-want +got):\n%s", diff)
		}
		if _, ok := got["extra"]; ok {
			t.Errorf("the runtime got a field the real sidecar drops: %v", got)
		}
	}
}

// TestCurrentRouterFanOut: a generator's frames are routed as they
// arrive; the first keeps the id, each later one gets a UUID and the
// envelope's id as parent_id.
func TestCurrentRouterFanOut(t *testing.T) {
	next := make(chan struct{})
	r, q := currentTestRouter(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "event: downstream\ndata: {\"payload\":%d,\"route\":{\"prev\":[\"a\"],\"curr\":\"b\",\"next\":[]}}\n\n", i)
			w.(http.Flusher).Flush()
			if i == 0 { // the rest only once the first one is sent on
				select {
				case <-next:
				case <-time.After(10 * time.Second):
					return
				}
			}
		}
		io.WriteString(w, "event: done\ndata: {}\n\n")
	})
	r.q = sendHook{q, func() { close(next) }}
	in := `{"id":"m","parent_id":"root","route":{"prev":[],"curr":"a","next":["b"]},"payload":null}`
	if err := r.handle(context.Background(), &message{Body: []byte(in)}); err != nil {
		t.Fatal(err)
	}
	if len(q.sends) != 3 {
		t.Fatalf("%d messages sent, want 3: %+v", len(q.sends), q.sends)
	}
	ids := map[string]bool{}
	for i, s := range q.sends {
		id, _ := s.env["id"].(string)
		parent, hasParent := s.env["parent_id"]
		switch {
		case s.actor != "b" || s.env["payload"] != float64(i):
			t.Errorf("frame %d: %s %v", i, s.actor, s.env)
		case i == 0 && (id != "m" || hasParent):
			t.Errorf("first frame: id %q parent %v, want m and none (the real router drops it)", id, parent)
		case i > 0 && (!uuidRE.MatchString(id) || parent != "m"):
			t.Errorf("frame %d: id %q parent %v, want a UUID and m", i, id, parent)
		}
		ids[id] = true
	}
	if len(ids) != 3 {
		t.Errorf("ids %v are not distinct", ids)
	}
}

// sendHook calls hook after the first send.
type sendHook struct {
	*fakeQueues
	hook func()
}

func (s sendHook) send(ctx context.Context, actor string, body []byte) error {
	err := s.fakeQueues.send(ctx, actor, body)
	if len(s.sends) == 1 {
		s.hook()
	}
	return err
}

func TestCurrentRouterSendFailsRequeues(t *testing.T) {
	r, q := currentTestRouter(t, jsonAnswer(200, `{"frames":[`+toSink+`,`+toB+`]}`))
	q.failSend = "b"
	err := r.handle(context.Background(), &message{Body: []byte(inEnvelope)})
	if err == nil || !strings.Contains(err.Error(), "failed to route response 1") {
		t.Errorf("handle: %v, want the failed route", err)
	}
	if q.acks != 0 || q.requeues != 1 || len(q.sends) != 1 {
		t.Errorf("%d acks, %d requeues, %d sent; want the message requeued after the first frame", q.acks, q.requeues, len(q.sends))
	}
}

// TestCurrentRouterTimeout: the message as it came goes to the sump,
// and the sidecar stops without acknowledging it.
func TestCurrentRouterTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r, q := currentTestRouter(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	r.cfg.RuntimeTimeout = 200 * time.Millisecond
	err := r.handle(context.Background(), &message{Body: []byte(inEnvelope)})
	if !errors.Is(err, errRuntimeTimeout) {
		t.Fatalf("handle: %v, want the runtime timeout", err)
	}
	if q.acks != 0 || q.requeues != 0 {
		t.Errorf("%d acks, %d requeues, want neither", q.acks, q.requeues)
	}
	if len(q.sends) != 1 || q.sends[0].actor != "x-sump" {
		t.Fatalf("sent %+v, want one message to the sump", q.sends)
	}
	p := q.sends[0].env["payload"].(map[string]any)
	if p["error"] != "Runtime timeout exceeded after 200ms" || q.sends[0].env["id"] != "m" {
		t.Errorf("sump got %v", q.sends[0].env)
	}
}

// TestCurrentRouterStopped: SIGTERM cuts the runtime call short. The
// message goes to the sump and is acknowledged where the broker calls
// ignore it (RabbitMQ), and is left in flight where they fail (SQS).
func TestCurrentRouterStopped(t *testing.T) {
	for _, sqs := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopFailsBroker=%v", sqs), func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			defer close(release)
			r, q := currentTestRouter(t, func(w http.ResponseWriter, r *http.Request) {
				close(started)
				<-release
			})
			r.stopFailsBroker = sqs
			ctx, stop := context.WithCancel(context.Background())
			go func() {
				<-started
				stop()
			}()
			err := r.handle(ctx, &message{Body: []byte(inEnvelope)})
			if sqs {
				if err == nil || q.acks+q.requeues+len(q.sends) != 0 {
					t.Errorf("handle: %v; %d acks, %d requeues, %d sent; want an error and nothing done", err, q.acks, q.requeues, len(q.sends))
				}
				return
			}
			if err != nil || q.acks != 1 || len(q.sends) != 1 || q.sends[0].actor != "x-sump" {
				t.Fatalf("handle: %v; %d acks, sent %+v; want the message acknowledged and at the sump", err, q.acks, q.sends)
			}
			if msg := q.sends[0].env["payload"].(map[string]any)["error"].(string); !strings.Contains(msg, "context canceled") {
				t.Errorf("sump error %q, want the cancelled call", msg)
			}
		})
	}
}

func TestCurrentEndActor(t *testing.T) {
	var got []byte
	r, q := currentTestRouter(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"frames":[{"payload":{},"route":{"prev":[],"curr":"","next":[]}}]}`)
	})
	r.cfg.Actor, r.cfg.IsEndActor = "x-sink", true
	in := `{"id":"m","route":{"prev":["a"],"curr":"","next":[]},"payload":1,"status":{"phase":"succeeded"}}`
	if err := r.handle(context.Background(), &message{Body: []byte(in)}); err != nil {
		t.Fatal(err)
	}
	if string(got) != in {
		t.Errorf("the runtime got %s, want the message as it came", got)
	}
	if q.acks != 1 || len(q.sends) != 0 {
		t.Errorf("%d acks, sent %+v; want it consumed", q.acks, q.sends)
	}

	// A call that fails puts the message back, as in the real router.
	r.rt = newHTTPRuntime(filepath.Join(t.TempDir(), socketName))
	if err := r.handle(context.Background(), &message{Body: []byte(in)}); err == nil || q.requeues != 1 {
		t.Errorf("handle: %v, %d requeues; want the message requeued", err, q.requeues)
	}

	// The sump drops what is no envelope instead of sending it to itself.
	r.cfg.Actor = "x-sump"
	if err := r.handle(context.Background(), &message{Body: []byte("nope")}); err != nil || len(q.sends) != 0 || q.acks != 2 {
		t.Errorf("handle: %v, sent %+v, %d acks; want it dropped", err, q.sends, q.acks)
	}
}

func TestHTTPRuntimeInvoke(t *testing.T) {
	tests := []struct {
		name    string
		runtime http.HandlerFunc
		frames  []string // each frame's error, or its route.curr
		wantErr string
	}{
		{name: "frames", runtime: jsonAnswer(200, `{"frames":[`+toB+`,`+toSink+`]}`), frames: []string{"b", ""}},
		{name: "no content", runtime: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }},
		{name: "bad request", runtime: jsonAnswer(400, badRequest), frames: []string{"msg_parsing_error"}},
		{name: "handler error", runtime: jsonAnswer(500, failed), frames: []string{"processing_error"}},
		{name: "stream", runtime: sseAnswer("downstream "+toB, "upstream {}", "downstream "+toSink, "done {}"), frames: []string{"b", ""}},
		{name: "stream without done", runtime: sseAnswer("downstream " + toB), frames: []string{"b"}},
		{name: "stream error", runtime: sseAnswer("downstream "+toB, "error "+failed), frames: []string{"b"}, wantErr: "boom"},
		{name: "stream with a broken frame", runtime: sseAnswer("downstream {"), wantErr: "parse downstream frame"},
		{name: "broken success", runtime: jsonAnswer(200, `{"frames":`), wantErr: "failed to parse runtime success response"},
		{name: "frames of the wrong shape", runtime: jsonAnswer(200, `{"frames":[{"route":[]}]}`), wantErr: "failed to parse runtime success response"},
		{name: "not found", runtime: http.NotFound, wantErr: "runtime returned HTTP 404 with unparseable body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := newHTTPRuntime(filepath.Join(fakeHTTPRuntime(t, tc.runtime), socketName))
			var got []string
			err := rt.invoke(context.Background(), []byte(`{}`), 5*time.Second, func(f frame, i int) {
				if i != len(got) {
					t.Errorf("frame index %d, want %d", i, len(got))
				}
				if f.Error != "" {
					got = append(got, f.Error)
				} else {
					got = append(got, f.Route.Curr)
				}
			})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.frames, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHTTPRuntimeTimeout: a stream that stops mid-way ends in the
// call's deadline, which the router tells from other errors.
func TestHTTPRuntimeTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	for _, stream := range []bool{false, true} {
		rt := newHTTPRuntime(filepath.Join(fakeHTTPRuntime(t, func(w http.ResponseWriter, r *http.Request) {
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "event: downstream\ndata: %s\n\n", toB)
				w.(http.Flusher).Flush()
			}
			<-release
		}), socketName))
		n := 0
		err := rt.invoke(context.Background(), []byte(`{}`), 300*time.Millisecond, func(frame, int) { n++ })
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("stream %v: error %v, want the deadline", stream, err)
		}
		if stream && n != 1 {
			t.Errorf("%d frames before the deadline, want 1", n)
		}
	}
}

// TestCurrentRuntimeNeverReady: without the runtime's ready file within
// ASYA_RUNTIME_READY_TIMEOUT the sidecar stops with an error (exit 1), as
// the real one does, before it touches the broker.
func TestCurrentRuntimeNeverReady(t *testing.T) {
	cfg := config{
		Actor: "a", HappyEnd: "x-sink", ErrorEnd: "x-sump", RuntimeTimeout: time.Second, Transport: "rabbitmq",
		SocketDir: t.TempDir(), Rabbit: rabbitConfig{URL: "amqp://guest:guest@127.0.0.1:1/", Exchange: "asya"},
		Current: &currentConfig{Namespace: "ns", ReadyTimeout: 300 * time.Millisecond},
	}
	err := run(context.Background(), cfg, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "runtime not ready after 300ms") {
		t.Errorf("run: %v, want the ready timeout", err)
	}
}

// TestCurrentRouterRetries: with the 0.5 retry variables set, a handler
// error goes back to the actor's own queue, delayed, until the last
// attempt; a non-retryable one and the last one go to the sump, and so
// does every one where the broker cannot delay (RabbitMQ).
func TestCurrentRouterRetries(t *testing.T) {
	policy := &retryPolicy{Policy: "constant", MaxAttempts: 3, InitialInterval: 2 * time.Second, MaxInterval: time.Minute,
		Coefficient: 2, NonRetryable: []string{"Exception"}}
	at := func(attempt int, actor string) string {
		return fmt.Sprintf(`{"id":"m","route":{"prev":[],"curr":"a","next":[]},"payload":1,"status":{"phase":"pending",`+
			`"actor":%q,"attempt":%d,"max_attempts":3,"created_at":"c","updated_at":"u"}}`, actor, attempt)
	}
	valueError := `{"error":"processing_error","details":{"message":"no","type":"ValueError","mro":["StandardError"],"traceback":"tb"}}`
	tests := []struct {
		name, in, answer string
		noDelay          bool
		retried          int     // the attempt the retry carries, or 0
		reason           string  // the sump's, when not retried
		attempt          float64 // the sump's status.attempt
	}{
		{name: "first attempt", in: at(1, "a"), answer: valueError, retried: 2},
		{name: "a new actor's first attempt", in: at(3, "z"), answer: valueError, retried: 2},
		{name: "last attempt", in: at(3, "a"), answer: valueError, reason: "MaxRetriesExhausted", attempt: 3},
		{name: "non-retryable by its mro", in: at(1, "a"), answer: failed, reason: "NonRetryableFailure", attempt: 1},
		{name: "no delay on the broker", in: at(1, "a"), answer: valueError, noDelay: true, reason: "RuntimeError", attempt: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, q := currentTestRouter(t, jsonAnswer(500, tc.answer))
			r.cfg.Current.Retry, q.noDelay = policy, tc.noDelay
			if err := r.handle(context.Background(), &message{Body: []byte(tc.in)}); err != nil || q.acks != 1 {
				t.Fatalf("handle: %v, %d acks; want it acknowledged", err, q.acks)
			}
			if tc.retried > 0 {
				if len(q.delayed) != 1 || len(q.sends) != 0 || q.delayed[0].actor != "a" || q.delays[0] != 2*time.Second {
					t.Fatalf("delayed %+v by %v, sent %+v; want one retry to a in 2s", q.delayed, q.delays, q.sends)
				}
				st := q.delayed[0].env["status"].(map[string]any)
				if st["phase"] != "retrying" || st["attempt"] != float64(tc.retried) || st["max_attempts"] != 3.0 ||
					field(st, "error", "type") != "ValueError" || field(st, "error", "traceback") != "tb" {
					t.Errorf("retry status %v", st)
				}
				return
			}
			if len(q.sends) != 1 || q.sends[0].actor != "x-sump" || len(q.delayed) != 0 {
				t.Fatalf("sent %+v, delayed %+v; want the sump alone", q.sends, q.delayed)
			}
			st := q.sends[0].env["status"].(map[string]any)
			if st["reason"] != tc.reason || st["attempt"] != tc.attempt || st["max_attempts"] != 3.0 {
				t.Errorf("sump status %v, want %s at attempt %v of 3", st, tc.reason, tc.attempt)
			}
		})
	}
}

// TestCurrentRouterRetries1x: on the 1.x line a handler error goes back
// to the actor's own queue, delayed, while its policy has attempts and
// time left; otherwise it ends in the sink with phase failed, or goes to
// the policy's onExhausted. Where the broker cannot delay (RabbitMQ) the
// first retry ends in the sink at once.
func TestCurrentRouterRetries1x(t *testing.T) {
	set := &policySet{
		Policies: map[string]policy{
			"default":   {MaxAttempts: 3, Backoff: "linear", InitialDelay: 2 * time.Second, MaxDuration: time.Hour},
			"hard-fail": {MaxAttempts: 1},
			"rescue":    {MaxAttempts: 1, OnExhausted: []string{"fixer"}},
		},
		Rules: []policyRule{{Errors: []string{"KeyError"}, Policy: "hard-fail"}, {Errors: []string{"mod.Broken"}, Policy: "rescue"}},
	}
	first := testNow.Add(-time.Minute).Format(time.RFC3339)
	at := func(attempt int, headers string) string {
		return fmt.Sprintf(`{"id":"m","route":{"prev":[],"curr":"a","next":["b"]},"headers":%s,"payload":1,"status":{"phase":"pending",`+
			`"actor":"a","attempt":%d,"max_attempts":1,"created_at":"c","updated_at":"u"}}`, headers, attempt)
	}
	answer := func(typ string) string {
		return `{"error":"processing_error","details":{"message":"no","type":"` + typ + `","mro":["Exception"],"traceback":"tb"}}`
	}
	tests := []struct {
		name, in, answer string
		set              *policySet
		noDelay          bool
		retried          int    // the attempt the retry carries, or 0
		to, reason       string // where it ended, and why
		attempt, most    float64
	}{
		{name: "no policies: to the sink", in: at(1, `{}`), answer: answer("ValueError"), to: "x-sink", reason: "RuntimeError", attempt: 1},
		{name: "default, first attempt", in: at(1, `{}`), answer: answer("ValueError"), set: set, retried: 2},
		{name: "default, second attempt", in: at(2, `{"x-asya-first-attempt":"`+first+`"}`), answer: answer("ValueError"), set: set, retried: 3},
		{name: "default, last attempt", in: at(3, `{}`), answer: answer("ValueError"), set: set, to: "x-sink", reason: "PolicyExhausted",
			attempt: 3, most: 3},
		{name: "default, out of time", in: at(2, `{"x-asya-first-attempt":"2026-01-01T00:00:00Z"}`), answer: answer("ValueError"), set: set,
			to: "x-sink", reason: "PolicyExhausted", attempt: 2, most: 3},
		{name: "a rule to one attempt", in: at(1, `{}`), answer: answer("KeyError"), set: set, to: "x-sink", reason: "PolicyExhausted",
			attempt: 1, most: 1},
		{name: "onExhausted", in: at(1, `{}`), answer: answer("mod.Broken"), set: set, to: "fixer", reason: "PolicyRouted", attempt: 1, most: 1},
		{name: "no delay on the broker", in: at(1, `{}`), answer: answer("ValueError"), set: set, noDelay: true, to: "x-sink",
			reason: "RuntimeError", attempt: 2, most: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, q := currentTestRouter(t, jsonAnswer(500, tc.answer))
			r.cfg.Current.Line, r.cfg.Current.Policies, q.noDelay = "1.x", tc.set, tc.noDelay
			if err := r.handle(context.Background(), &message{Body: []byte(tc.in)}); err != nil || q.acks != 1 {
				t.Fatalf("handle: %v, %d acks; want it acknowledged", err, q.acks)
			}
			if tc.retried > 0 {
				delay := time.Duration(tc.retried-1) * 2 * time.Second // linear: the failed attempt times 2s
				if len(q.delayed) != 1 || len(q.sends) != 0 || q.delayed[0].actor != "a" || q.delays[0] != delay {
					t.Fatalf("delayed %+v by %v, sent %+v; want one retry to a in %v", q.delayed, q.delays, q.sends, delay)
				}
				env := q.delayed[0].env
				st := env["status"].(map[string]any)
				if st["phase"] != "retrying" || st["attempt"] != float64(tc.retried) || st["max_attempts"] != 3.0 || field(st, "error", "type") != "ValueError" {
					t.Errorf("retry status %v", st)
				}
				if want := first; tc.retried == 2 && field(env, "headers", firstAttemptHeader) != testNow.Format(time.RFC3339) ||
					tc.retried == 3 && field(env, "headers", firstAttemptHeader) != want {
					t.Errorf("retry headers %v: the first attempt's time, stamped once", env["headers"])
				}
				return
			}
			if len(q.sends) != 1 || q.sends[0].actor != tc.to || len(q.delayed) != 0 {
				t.Fatalf("sent %+v, delayed %+v; want %s alone", q.sends, q.delayed, tc.to)
			}
			env := q.sends[0].env
			st := env["status"].(map[string]any)
			if st["phase"] != "failed" || st["reason"] != tc.reason || st["attempt"] != tc.attempt || st["max_attempts"] != tc.most ||
				field(st, "error", "traceback") != "tb" {
				t.Errorf("%s got status %v, want failed, %s at attempt %v of %v", tc.to, st, tc.reason, tc.attempt, tc.most)
			}
			if tc.to == "fixer" && (field(env, "route", "curr") != "a" || fmt.Sprint(field(env, "route", "next")) != "[fixer]" || env["payload"] != 1.0) {
				t.Errorf("onExhausted got %v, want the envelope itself with route.next [fixer]", env)
			}
		})
	}
}
