package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// httpRuntime is the current runtime's side of the socket: HTTP/1.1 on
// $ASYA_SOCKET_DIR/asya-runtime.sock, POST /invoke with the whole
// envelope (internal/runtime/client.go at a7cec2a). The readiness wait
// before the first message is runtimeClient's, the same for both
// generations: the ready file, then a connection to the socket.
type httpRuntime struct {
	client *http.Client
}

func newHTTPRuntime(socket string) httpRuntime {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
	return httpRuntime{client: &http.Client{Transport: &http.Transport{DialContext: dial}}}
}

// frame is one result of the runtime: a downstream frame, or an error
// (error set) from a 400 or 500 answer or an SSE error event. Its fields
// are typed as the real sidecar's RuntimeResponse, so that the same
// answers fail to parse.
type frame struct {
	Payload json.RawMessage            `json:"payload,omitempty"`
	Route   currentRoute               `json:"route"`
	Status  *envStatus                 `json:"status,omitempty"`
	Error   string                     `json:"error,omitempty"`
	Details errorDetails               `json:"details,omitempty"`
	Headers map[string]json.RawMessage `json:"headers,omitempty"`
}

type errorDetails struct {
	Message   string   `json:"message,omitempty"`
	Type      string   `json:"type,omitempty"`
	MRO       []string `json:"mro,omitempty"`
	Traceback string   `json:"traceback,omitempty"`
}

// streamError is an SSE error event: a generator raised after the
// frames before it were routed.
type streamError struct{ frame frame }

func (e *streamError) Error() string {
	if e.frame.Details.Message != "" {
		return e.frame.Details.Message
	}
	return e.frame.Error
}

// invoke posts the envelope and hands each frame to onFrame as it
// arrives, with its index among the frames. A 204 hands none. A 400 or
// 500 (any other status) hands its error as frame 0 and is no error of
// invoke's; an SSE error event is, as a *streamError. ctx bounds the
// whole call, with timeout on top.
func (c httpRuntime) invoke(ctx context.Context, body []byte, timeout time.Duration, onFrame func(frame, int)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/invoke", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("failed to create HTTP request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("failed to send request to runtime: %w", err)
	}
	defer func() {
		cancel() // before Close: a stream left open must not hold it
		resp.Body.Close()
	}()
	// The order of these checks is the real client's: a stream is a
	// stream whatever its status.
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return nil
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		return readEvents(resp.Body, onFrame)
	case resp.StatusCode == http.StatusOK:
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("failed to read runtime response body: %w", err)
		}
		var ok struct {
			Frames []frame `json:"frames"`
		}
		if err := json.Unmarshal(b, &ok); err != nil {
			return fmt.Errorf("failed to parse runtime success response: %w", err)
		}
		for i, f := range ok.Frames {
			onFrame(f, i)
		}
		return nil
	default:
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("failed to read runtime response body: %w", err)
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("runtime returned HTTP %d with unparseable body: %s", resp.StatusCode, b)
		}
		onFrame(f, 0)
		return nil
	}
}

// readEvents reads the runtime's server-sent events: downstream frames
// go to onFrame as each arrives, upstream ones (progress for a gateway)
// are dropped, error ends the stream with a *streamError, done ends it.
// A stream that ends without done is no error, as in the real client.
func readEvents(r io.Reader, onFrame func(frame, int)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var event string
	var data []string
	n := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):])
		case line == "" && event != "":
			payload := []byte(strings.Join(data, "\n"))
			data = nil
			switch event {
			case "downstream":
				var f frame
				if err := json.Unmarshal(payload, &f); err != nil {
					return fmt.Errorf("parse downstream frame: %w", err)
				}
				onFrame(f, n)
				n++
			case "error":
				var f frame
				if err := json.Unmarshal(payload, &f); err != nil {
					return fmt.Errorf("parse error frame: %w", err)
				}
				return &streamError{frame: f}
			case "done":
				return nil
			}
			event = ""
		}
	}
	return sc.Err()
}
