package transport

import (
	"testing"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/internal/testenv"
)

func newFakeClock() *testenv.FakeClock { return testenv.NewFakeClock() }

// wantReason fails unless err is a transport Error with that reason.
func wantReason(t *testing.T, err error, reason string) *Error {
	t.Helper()
	te := AsError(err)
	if te == nil || te.Reason != reason {
		t.Fatalf("error = %v, want reason %s", err, reason)
	}
	return te
}
