// Package brokertest holds test helpers for the transport kinds' brokers.
// It is apart from internal/testenv, which package transport's own tests
// import and which therefore cannot import transport.
package brokertest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/asya-sh/asya-sync/transport"
)

// WantReason fails unless err is a transport Error with that reason.
func WantReason(t *testing.T, err error, reason string) *transport.Error {
	t.Helper()
	te := transport.AsError(err)
	if te == nil || te.Reason != reason {
		t.Fatalf("error = %v, want reason %s", err, reason)
	}
	return te
}

// Count shows a message count, an unknown one as -1.
func Count(p *int64) string {
	if p == nil {
		return "-1"
	}
	return fmt.Sprint(*p)
}

// Calls records the calls a broker client makes, by name, from any
// goroutine, for tests that count what an operation costs.
type Calls struct {
	mu    sync.Mutex
	calls []string
}

// Add records one call.
func (c *Calls) Add(name string) {
	c.mu.Lock()
	c.calls = append(c.calls, name)
	c.mu.Unlock()
}

// Take returns the calls recorded since the last Take.
func (c *Calls) Take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}
