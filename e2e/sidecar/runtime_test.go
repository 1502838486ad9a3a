package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeRuntime answers every connection with reply after delay.
func fakeRuntime(t *testing.T, reply []byte, delay time.Duration) runtimeClient {
	t.Helper()
	dir, l := listenRuntime(t)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if _, err := readFrame(conn); err != nil {
					return
				}
				time.Sleep(delay)
				if reply != nil {
					_ = writeFrame(conn, reply)
				}
			}()
		}
	}()
	return runtimeClient{socket: filepath.Join(dir, socketName), timeout: 500 * time.Millisecond}
}

func TestRuntimeCall(t *testing.T) {
	tests := []struct {
		name    string
		reply   []byte
		delay   time.Duration
		want    int
		wantErr string
		is      error
	}{
		{name: "array", reply: []byte(`[{"payload":1},{"payload":2}]`), want: 2},
		{name: "empty array", reply: []byte(` []`), want: 0},
		{name: "object", reply: []byte(`{"error":"x"}`), wantErr: "not a JSON array"},
		{name: "null", reply: []byte(`null`), wantErr: "not a JSON array"},
		{name: "broken JSON", reply: []byte(`[{"a":`), wantErr: "failed to parse runtime response"},
		{name: "closed without answer", reply: nil, wantErr: "failed to read response"},
		{name: "too slow", reply: []byte(`[]`), delay: 2 * time.Second, is: errRuntimeTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := fakeRuntime(t, tc.reply, tc.delay).call([]byte(`{"id":"m"}`))
			switch {
			case tc.is != nil:
				if !errors.Is(err, tc.is) {
					t.Errorf("error %v, want %v", err, tc.is)
				}
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, errRuntimeUnavailable) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case len(got) != tc.want:
				t.Errorf("%d results, want %d", len(got), tc.want)
			}
		})
	}
}

func TestRuntimeUnavailable(t *testing.T) {
	c := runtimeClient{socket: filepath.Join(t.TempDir(), socketName), timeout: time.Second}
	if _, err := c.call([]byte(`{}`)); !errors.Is(err, errRuntimeUnavailable) {
		t.Errorf("error %v, want %v", err, errRuntimeUnavailable)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.awaitRuntime(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("awaitRuntime: %v, want the context's end", err)
	}
	if err := c.awaitRuntime(context.Background(), 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("awaitRuntime: %v, want a timeout", err)
	}
}

func TestRuntimeReadyNeedsReadyFile(t *testing.T) {
	c := fakeRuntime(t, []byte(`[]`), 0)
	if c.ready() {
		t.Fatal("ready without the ready file")
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(c.socket), readyName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.awaitRuntime(context.Background(), 5*time.Second); err != nil {
		t.Error(err)
	}
}

func TestGatewayCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	if err := checkGateway(ctx, srv.URL); err != nil {
		t.Errorf("healthy gateway: %v", err)
	}
	if err := checkGateway(ctx, srv.URL+"/down"); err == nil {
		t.Error("gateway answering 503: no error")
	}
	srv.Close()
	cfg := testConfig("rabbitmq", t.TempDir())
	cfg.GatewayURL = srv.URL
	err := run(ctx, cfg, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "Gateway health check failed - sidecar cannot start") {
		t.Errorf("run with a gateway that is down: %v", err)
	}
}

// listenRuntime listens on the runtime socket of a new directory with a
// short path (Unix socket paths are limited), until the test ends.
func listenRuntime(t *testing.T) (string, net.Listener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, socketName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return dir, l
}
