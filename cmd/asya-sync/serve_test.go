package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/transport"
)

// TestDrainServesThroughTheDelay: told to stop, serve reports not ready but
// goes on answering, on old and new connections alike, each answer closing
// its connection, until the delay ends; then it refuses new connections and
// still finishes the call in flight.
func TestDrainServesThroughTheDelay(t *testing.T) {
	s := newTestService(t, 1<<20)
	broker := &heldBroker{arrived: make(chan struct{}), release: make(chan struct{})}
	s.hooks.Transports = lookupOf{broker}
	creds, ln := plainListener(t, s)
	base := "http://" + ln.Addr().String()
	ctx, term := context.WithCancel(context.Background())
	defer term()
	delayOver := make(chan time.Time)
	plan := drainPlan{delay: time.Hour, timeout: time.Minute, after: func(time.Duration) <-chan time.Time { return delayOver }}
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, creds, ln, nil, plan) }()

	keepAlive := &http.Client{Transport: &http.Transport{}}
	defer keepAlive.CloseIdleConnections()
	if closed := customize(t, keepAlive, base); closed {
		t.Fatal("an answer before the drain closes its connection")
	}
	// A sync in flight, held at the broker.
	inFlight := make(chan int, 1)
	go func() {
		resp, err := http.Post(base+"/sync", "application/json", strings.NewReader(`{"parent":`+actorJSON+`,"children":{}}`))
		if err != nil {
			t.Errorf("the sync in flight: %v", err)
			inFlight <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		inFlight <- resp.StatusCode
	}()
	<-broker.arrived

	term() // SIGTERM
	waitFor(t, func() bool { return status(base+"/readyz") == http.StatusServiceUnavailable })
	if !customize(t, keepAlive, base) {
		t.Error("draining, an answer on a kept-alive connection does not close it")
	}
	fresh := &http.Client{Transport: &http.Transport{}}
	defer fresh.CloseIdleConnections()
	if !customize(t, fresh, base) {
		t.Error("draining, an answer on a new connection does not close it")
	}
	if status(base+"/healthz") != http.StatusOK {
		t.Error("draining, /healthz does not answer 200")
	}

	close(delayOver)
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-done:
		t.Fatalf("serve returned (%v) with a call in flight", err)
	default:
	}
	close(broker.release)
	if code := <-inFlight; code != http.StatusOK {
		t.Errorf("the sync in flight got %d, want 200", code)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestNoDrainDelayClosesAtOnce: without a delay, serve closes its listener
// as soon as it is told to stop.
func TestNoDrainDelayClosesAtOnce(t *testing.T) {
	s := newTestService(t, 1<<20)
	creds, ln := plainListener(t, s)
	ctx, term := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.run(ctx, creds, ln, nil, drainPlan{timeout: time.Minute, after: func(time.Duration) <-chan time.Time {
			t.Error("waited for a delay of 0")
			return nil
		}})
	}()
	if status("http://"+ln.Addr().String()+"/readyz") != http.StatusOK {
		t.Fatal("not ready before the drain")
	}
	term()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after serve returned")
	}
}

// customize calls /customize, wants 200, and says whether the answer
// closed its connection.
func customize(t *testing.T, c *http.Client, base string) bool {
	t.Helper()
	resp, err := c.Post(base+"/customize", "application/json", strings.NewReader(`{"parent":`+actorJSON+`}`))
	if err != nil {
		t.Fatalf("customize: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("customize: %d", resp.StatusCode)
	}
	return resp.Close
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// heldBroker holds the first Ensure until release closes; the rest answer
// at once.
type heldBroker struct {
	transport.Broker
	once             sync.Once
	arrived, release chan struct{}
}

func (b *heldBroker) Ensure(context.Context, transport.Queue) error {
	b.once.Do(func() { close(b.arrived) })
	<-b.release
	return nil
}

func (b *heldBroker) Counts(context.Context, transport.Queue) (transport.Counts, error) {
	return transport.Counts{}, nil
}

// plainListener is what run serves s with in these tests: no credentials,
// and a listener on loopback.
func plainListener(t *testing.T, s *server) (*credentials, net.Listener) {
	t.Helper()
	creds, err := newCredentials(credentialFiles{}, s.log, s.metrics.registry)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return creds, ln
}
