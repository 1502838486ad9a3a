package brokers

import (
	"testing"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

func newFakeClock() *testenv.FakeClock { return testenv.NewFakeClock() }

// wantReason fails unless err is a transport Error with that reason.
func wantReason(t *testing.T, err error, reason string) *transport.Error {
	t.Helper()
	te := transport.AsError(err)
	if te == nil || te.Reason != reason {
		t.Fatalf("error = %v, want reason %s", err, reason)
	}
	return te
}
