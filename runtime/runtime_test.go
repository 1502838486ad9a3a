package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

// TestEmbedded checks both generations' scripts as built into the binary.
func TestEmbedded(t *testing.T) {
	for _, tc := range []struct {
		file     string
		embedded func() Script
		limit    int // bytes: every actor's ConfigMap carries the whole script
	}{
		{"asya_runtime.py", Embedded, 20 << 10},
		// The current generation's has the state layer besides.
		{"asya_runtime_http.py", EmbeddedHTTP, 40 << 10},
	} {
		got := tc.embedded()
		onDisk, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if got.Source != string(onDisk) {
			t.Errorf("embedded source differs from %s (%d vs %d bytes)", tc.file, len(got.Source), len(onDisk))
		}
		sum := sha256.Sum256(onDisk)
		if want := hex.EncodeToString(sum[:]); got.Hash != want {
			t.Errorf("%s: Hash = %q, want %q", tc.file, got.Hash, want)
		}
		if !strings.HasPrefix(got.Source, "#!/usr/bin/env python3\n") {
			t.Errorf("%s does not start with a python3 shebang", tc.file)
		}
		if len(got.Source) > tc.limit {
			t.Errorf("%s is %d bytes, want at most %d KiB", tc.file, len(got.Source), tc.limit>>10)
		}
		if again := tc.embedded(); again != got {
			t.Errorf("%s: the embedded script is not stable", tc.file)
		}
	}
	if EmbeddedHTTP().Hash == Embedded().Hash {
		t.Errorf("EmbeddedHTTP is the 0.3 script")
	}
}

// TestSpeaksHTTP: each embedded script is told apart by the protocol it
// serves, which decides whether a script running in an actor's pods may
// stand in for the current one.
func TestSpeaksHTTP(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want bool
	}{
		{"asya_runtime.py", Embedded().Source, false},
		{"asya_runtime_http.py", EmbeddedHTTP().Source, true},
		{"from-import", "import os\nfrom http.server import BaseHTTPRequestHandler\n", true},
		{"indented", "try:\n    import http.server\nexcept ImportError:\n    pass\n", true},
		{"mentioned only", "# no http.server here\nimport socket\n", false},
		{"other module", "import http.client\n", false},
		{"a longer name", "import http.servers\n", false},
		{"not at the line's start", "x = 1; import http.server\n", false},
		{"the last line, without a newline", "import os\nimport http.server", true},
		{"CRLF", "import os\r\nimport http.server\r\n", true},
		{"split over lines", "from http.server\nimport x\n", false},
	} {
		if got := SpeaksHTTP(tc.src); got != tc.want {
			t.Errorf("SpeaksHTTP(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	custom := write("custom.py", "print(1)\n")
	empty := write("empty.py", "")
	missing := filepath.Join(dir, "missing.py")

	tests := []struct {
		name    string
		path    string
		want    Script
		wantErr []string // substrings of the error
	}{
		{name: "empty path is the embedded script", path: "", want: Embedded()},
		{name: "file", path: custom, want: Script{
			Source: "print(1)\n",
			Hash:   "cc42155088fca5730758db72b2a5bca33112a941dfaa2d43098ec422ce4ea213",
		}},
		{name: "missing file", path: missing, wantErr: []string{missing, "no such file"}},
		{name: "empty file", path: empty, wantErr: []string{empty, "empty"}},
		{name: "directory", path: dir, wantErr: []string{dir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(tt.path)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Load(%q) = %+v, want an error", tt.path, got)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				if got != (Script{}) {
					t.Errorf("Load returned %+v alongside an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load(%q): %v", tt.path, err)
			}
			if got != tt.want {
				t.Errorf("Load(%q) = {%d bytes, %s}, want {%d bytes, %s}", tt.path, len(got.Source), got.Hash, len(tt.want.Source), tt.want.Hash)
			}
		})
	}
	if Embedded().Hash == "" || Embedded().Hash == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("embedded script hash %q is that of nothing", Embedded().Hash)
	}
}

// The response shape the Asya sidecar decodes.
type sidecarRoute struct {
	Actors  []string `json:"actors"`
	Current int      `json:"current"`
}

type sidecarResult struct {
	ID      string            `json:"id"`
	Payload json.RawMessage   `json:"payload"`
	Route   *sidecarRoute     `json:"route"`
	Headers map[string]string `json:"headers"`
	Error   string            `json:"error"`
	Details map[string]string `json:"details"`
}

const testHandlers = `
def double(p):
    return {"value": p["value"] * 2}

def fan(p):
    return [{"i": i} for i in range(p["n"])]

def nothing(p):
    return None

def boom(p):
    raise KeyError("missing-key")

def erase(e):
    e["route"] = {"actors": ["x"], "current": 0}
    return e
`

// lockedBuffer collects the child's stderr; failure messages read it while
// the child may still be writing.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runningScript is the embedded script running under python3.
type runningScript struct {
	cmd    *exec.Cmd
	dir    string
	socket string
	stderr *lockedBuffer
	done   chan error
}

func startScript(t *testing.T, handler string, env ...string) *runningScript {
	t.Helper()
	return launch(t, Embedded(), testHandlers, handler, env...)
}

// launch runs script under python3 with handlers as the module
// "handlers", and waits until it is ready. The process gets SIGTERM when
// the test ends, and is killed if it has not stopped 10 s later.
func launch(tb testing.TB, script Script, handlers, handler string, env ...string) *runningScript {
	tb.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("ASYA_REQUIRE_INTEGRATION") == "1" {
			tb.Fatal("python3 not found and ASYA_REQUIRE_INTEGRATION=1")
		}
		tb.Skip("python3 not found; set ASYA_REQUIRE_INTEGRATION=1 to make this a failure")
	}
	// Unix socket paths are limited to about 100 bytes, so stay short.
	dir, err := os.MkdirTemp("", "asya")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "asya_runtime.py")
	if err := os.WriteFile(path, []byte(script.Source), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "handlers.py"), []byte(handlers), 0o644); err != nil {
		tb.Fatal(err)
	}
	rs := &runningScript{dir: filepath.Join(dir, "sock"), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	rs.socket = filepath.Join(rs.dir, "asya-runtime.sock")
	rs.cmd = exec.Command(python, path)
	rs.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"PYTHONPATH=" + dir,
		"PYTHONDONTWRITEBYTECODE=1",
		"ASYA_SOCKET_DIR=" + rs.dir,
		"ASYA_HANDLER=" + handler,
	}, env...)
	rs.cmd.Stderr = rs.stderr
	if err := rs.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { rs.done <- rs.cmd.Wait() }()
	tb.Cleanup(func() {
		_ = rs.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-rs.done:
		case <-time.After(10 * time.Second):
			_ = rs.cmd.Process.Kill()
			<-rs.done
		}
	})

	ready := filepath.Join(rs.dir, "runtime-ready")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			return rs
		}
		select {
		case err := <-rs.done:
			rs.done <- err
			tb.Fatalf("runtime exited before becoming ready: %v\n%s", err, rs.stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("runtime not ready after 10s\n%s", rs.stderr)
		}
	}
}

// call sends one framed request on a fresh connection and returns the raw
// response body.
func (rs *runningScript) call(t *testing.T, body []byte) []byte {
	t.Helper()
	conn, err := net.DialTimeout("unix", rs.socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := conn.Write(append(msg, body...)); err != nil {
		t.Fatal(err)
	}
	var head [4]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		t.Fatalf("reading length: %v", err)
	}
	resp := make([]byte, binary.BigEndian.Uint32(head[:]))
	if _, err := io.ReadFull(conn, resp); err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp
}

func (rs *runningScript) results(t *testing.T, body string) []sidecarResult {
	t.Helper()
	raw := rs.call(t, []byte(body))
	var out []sidecarResult
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("response %s is not a result array: %v", raw, err)
	}
	if out == nil {
		t.Fatalf("response %s is not an array", raw)
	}
	return out
}

func (rs *runningScript) stop(t *testing.T) {
	t.Helper()
	if err := rs.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-rs.done:
		rs.done <- err
		if err != nil {
			t.Errorf("runtime exited with %v after SIGTERM\n%s", err, rs.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runtime still running 10s after SIGTERM")
	}
	if _, err := os.Lstat(rs.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still present after shutdown: %v", err)
	}
}

const request = `{"id": "m-1", "route": {"actors": ["prep", "model", "post"], "current": 0},
	"payload": %s, "headers": {"trace_id": "t-9"}}`

func req(payload string) string { return strings.Replace(request, "%s", payload, 1) }

func TestScriptPayloadMode(t *testing.T) {
	rs := startScript(t, "handlers.double")

	// The sidecar probes by opening and closing the socket.
	probe, err := net.Dial("unix", rs.socket)
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()

	got := rs.results(t, req(`{"value": 21}`))
	if len(got) != 1 {
		t.Fatalf("got %d results, want 1: %+v", len(got), got)
	}
	r := got[0]
	if r.Error != "" {
		t.Fatalf("unexpected error %q: %v", r.Error, r.Details)
	}
	if string(r.Payload) != `{"value":42}` {
		t.Errorf("payload = %s, want {\"value\":42}", r.Payload)
	}
	if r.Route == nil || strings.Join(r.Route.Actors, ",") != "prep,model,post" || r.Route.Current != 1 {
		t.Errorf("route = %+v, want actors [prep model post], current 1", r.Route)
	}
	if r.Headers["trace_id"] != "t-9" || r.ID != "m-1" {
		t.Errorf("headers = %v, id = %q; want them carried over", r.Headers, r.ID)
	}

	bad := rs.results(t, `{"route": `)
	if len(bad) != 1 || bad[0].Error != "msg_parsing_error" || bad[0].Details["message"] == "" {
		t.Errorf("invalid JSON gave %+v, want one msg_parsing_error with a message", bad)
	}
	noRoute := rs.results(t, `{"payload": 1}`)
	if len(noRoute) != 1 || noRoute[0].Error != "msg_parsing_error" {
		t.Errorf("envelope without route gave %+v, want msg_parsing_error", noRoute)
	}
	rs.stop(t)
}

func TestScriptFanOutAndEmpty(t *testing.T) {
	rs := startScript(t, "handlers.fan")
	got := rs.results(t, req(`{"n": 3}`))
	if len(got) != 3 {
		t.Fatalf("got %d results, want 3", len(got))
	}
	for i, r := range got {
		if want := `{"i":` + string(rune('0'+i)) + `}`; string(r.Payload) != want {
			t.Errorf("result %d payload = %s, want %s", i, r.Payload, want)
		}
		if r.Route == nil || r.Route.Current != 1 || len(r.Route.Actors) != 3 {
			t.Errorf("result %d route = %+v", i, r.Route)
		}
	}
	if raw := rs.call(t, []byte(req(`{"n": 0}`))); string(raw) != "[]" {
		t.Errorf("empty fan-out = %s, want []", raw)
	}
	rs.stop(t)

	rs = startScript(t, "handlers.nothing")
	if raw := rs.call(t, []byte(req(`1`))); string(raw) != "[]" {
		t.Errorf("None result = %s, want []", raw)
	}
	rs.stop(t)
}

func TestScriptErrors(t *testing.T) {
	rs := startScript(t, "handlers.boom")
	got := rs.results(t, req(`{}`))
	if len(got) != 1 || got[0].Error != "processing_error" {
		t.Fatalf("got %+v, want one processing_error", got)
	}
	d := got[0].Details
	if d["type"] != "KeyError" || d["message"] != "'missing-key'" || !strings.Contains(d["traceback"], `raise KeyError("missing-key")`) {
		t.Errorf("details = %v", d)
	}
	if got[0].Route != nil || got[0].Payload != nil {
		t.Errorf("error result carries route or payload: %+v", got[0])
	}
	rs.stop(t)

	rs = startScript(t, "handlers.erase", "ASYA_HANDLER_MODE=envelope")
	got = rs.results(t, req(`{}`))
	if len(got) != 1 || got[0].Error != "processing_error" || !strings.Contains(got[0].Details["message"], "prep") {
		t.Errorf("route rewrite gave %+v, want a processing_error naming the processed actors", got)
	}
	rs.stop(t)
}
