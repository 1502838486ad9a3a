package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The runtime's socket and the file it writes once its handler is loaded,
// in ASYA_SOCKET_DIR.
const (
	socketName = "asya-runtime.sock"
	readyName  = "runtime-ready"
)

var (
	// errRuntimeUnavailable: the socket does not answer; the message is
	// put back and the sidecar waits for the runtime again.
	errRuntimeUnavailable = errors.New("runtime not reachable")
	// errRuntimeTimeout: no answer within ASYA_RUNTIME_TIMEOUT.
	errRuntimeTimeout = errors.New("runtime timeout exceeded")
)

// runtimeClient talks to the runtime: one connection per message, each
// way a 4-byte big-endian length and that many bytes of JSON.
type runtimeClient struct {
	socket  string
	timeout time.Duration
}

func newRuntimeClient(cfg config) runtimeClient {
	return runtimeClient{socket: filepath.Join(cfg.SocketDir, socketName), timeout: cfg.RuntimeTimeout}
}

// call sends the envelope and returns the elements of the response array.
func (c runtimeClient) call(body []byte) ([]json.RawMessage, error) {
	deadline := time.Now().Add(c.timeout)
	conn, err := net.DialTimeout("unix", c.socket, c.timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errRuntimeUnavailable, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if err := writeFrame(conn, body); err != nil {
		return nil, c.ioError("failed to send message to runtime", err)
	}
	resp, err := readFrame(conn)
	if err != nil {
		return nil, c.ioError("failed to read response from runtime", err)
	}
	if t := bytes.TrimSpace(resp); len(t) == 0 || t[0] != '[' {
		return nil, fmt.Errorf("runtime response is not a JSON array: %.200q", resp)
	}
	var out []json.RawMessage
	if err := json.Unmarshal(resp, &out); err != nil {
		return nil, fmt.Errorf("failed to parse runtime response: %v", err)
	}
	return out, nil
}

func (c runtimeClient) ioError(what string, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w after %s", errRuntimeTimeout, c.timeout)
	}
	return fmt.Errorf("%s: %v", what, err)
}

func writeFrame(w io.Writer, body []byte) error {
	frame := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	_, err := w.Write(append(frame, body...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(head[:]))
	_, err := io.ReadFull(r, body)
	return body, err
}

// ready reports whether the runtime has written its ready file and
// accepts connections; the runtime ignores a connection that sends nothing.
func (c runtimeClient) ready() bool {
	if _, err := os.Stat(filepath.Join(filepath.Dir(c.socket), readyName)); err != nil {
		return false
	}
	conn, err := net.DialTimeout("unix", c.socket, 2*time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// awaitRuntime polls until the runtime is ready, as the real sidecar does
// before it consumes; it gives up after maxWait, or when ctx ends.
func (c runtimeClient) awaitRuntime(ctx context.Context, maxWait time.Duration) error {
	give := time.After(maxWait)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for !c.ready() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-give:
			return fmt.Errorf("runtime not ready after %s (no %s or no answer on %s)", maxWait, readyName, c.socket)
		case <-tick.C:
		}
	}
	return nil
}
