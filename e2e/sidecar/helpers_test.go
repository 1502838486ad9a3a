package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.UseTestAWSCredentials()
	code := m.Run()
	removeBuiltSidecar()
	os.Exit(code)
}

// handlers is the module the tests' runtimes load.
const handlers = `import time

def echo(payload):
    return {"echo": payload}

def fail(payload):
    raise ValueError("refused %r" % (payload,))

def slow(payload):
    time.sleep(float(payload.get("seconds", 1)))
    return {"echo": payload}

def nothing(payload):
    return None
`

// socketDir is a new directory for a runtime's socket, not yet created
// (the runtime creates it).
func socketDir(t *testing.T) string {
	t.Helper()
	// Not t.TempDir: a Unix socket path must stay under 108 bytes.
	dir, err := os.MkdirTemp("", "sidecar")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	mods := filepath.Join(dir, "mods")
	if err := os.Mkdir(mods, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mods, "handlers.py"), []byte(handlers), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "run")
}

// startRuntime runs the project's Python runtime with handlers.<handler>
// on the socket directory; it returns a function that stops it with
// SIGTERM, which also runs after the test.
func startRuntime(t *testing.T, sockets, handler string, env ...string) (stop func()) {
	t.Helper()
	return startScript(t, "../../runtime/asya_runtime.py", sockets, "handlers."+handler, env...)
}

// startScript is startRuntime for any runtime script of the project's
// and any handler (module.function) in the socket directory's modules.
func startScript(t *testing.T, script, sockets, handler string, env ...string) (stop func()) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3 is needed to run the runtime", err)
	}
	cmd := exec.Command(python, script)
	cmd.Env = append(os.Environ(), "ASYA_SOCKET_DIR="+sockets, "ASYA_HANDLER="+handler,
		"PYTHONPATH="+filepath.Join(filepath.Dir(sockets), "mods"))
	cmd.Env = append(cmd.Env, env...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("runtime output:\n%s", out.String())
		}
	})
	return stop
}

// testConfig is a sidecar of a new actor whose end actors are new too,
// so that parallel runs never share a queue.
func testConfig(transport, socketDir string) config {
	actor := testenv.ActorName("a")
	return config{
		LogLevel: slog.LevelDebug, Actor: actor, Transport: transport,
		HappyEnd: testenv.ActorName("happy"), ErrorEnd: testenv.ActorName("error"),
		RuntimeTimeout: 20 * time.Second, SocketDir: socketDir,
		// An exchange of the test's own, so that no other test's queue is
		// bound under the same routing key.
		Rabbit: rabbitConfig{URL: testenv.RabbitURL(), Exchange: "asya-test-" + actor},
		SQS:    sqsConfig{Region: "us-east-1", Endpoint: testenv.SQSEndpoint(), VisibilityTimeout: 30, WaitTimeSeconds: 1},
	}
}

// sidecarRun is a sidecar running in-process.
type sidecarRun struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
	seen   bool // the test looked at err
	log    *syncBuffer
}

// logged says whether the sidecar's log holds s.
func (r *sidecarRun) logged(s string) bool { return strings.Contains(r.log.String(), s) }

// stop ends the sidecar as SIGTERM does and returns run's error.
func (r *sidecarRun) stop() error {
	r.cancel()
	return r.wait(30 * time.Second)
}

// wait returns run's error once it returns by itself.
func (r *sidecarRun) wait(within time.Duration) error {
	r.once.Do(func() {
		select {
		case r.err = <-r.done:
		case <-time.After(within):
			r.err = errors.New("sidecar did not stop in time")
		}
	})
	r.seen = true
	return r.err
}

// startSidecar runs the sidecar in-process until stopped or the end of
// the test, which fails if run returned an error nobody looked at.
func startSidecar(t *testing.T, cfg config) *sidecarRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	r := &sidecarRun{cancel: cancel, done: make(chan error, 1), log: out}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: cfg.LogLevel}))
	go func() { r.done <- run(ctx, cfg, log) }()
	t.Cleanup(func() {
		seen := r.seen
		if err := r.stop(); err != nil && !seen {
			t.Errorf("sidecar: %v", err)
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("sidecar log:\n%s", out.String())
		}
	})
	return r
}

// envelopeOf is a new envelope for the route, at current.
func envelopeOf(id string, payload any, current int, actors ...string) []byte {
	return mustJSON(map[string]any{"id": id, "route": map[string]any{"actors": actors, "current": current}, "payload": payload})
}

// decoded is a message as the tests look at it.
type decoded struct {
	ID       string  `json:"id"`
	ParentID *string `json:"parent_id"`
	Route    route   `json:"route"`
	Payload  map[string]any
	Headers  map[string]any
}

func decode(t *testing.T, body []byte) decoded {
	t.Helper()
	var d decoded
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("message %s: %v", body, err)
	}
	return d
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLogger(*testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
