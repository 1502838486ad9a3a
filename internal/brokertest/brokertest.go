// Package brokertest holds test helpers for the transport kinds' brokers.
// It is apart from internal/testenv, which package transport's own tests
// import and which therefore cannot import transport.
package brokertest

import (
	"fmt"
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
