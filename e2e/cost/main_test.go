//go:build e2e

// Package cost holds the measurements run only when asked
// (docs/performance.md): the fleet, with the driver run the way
// Metacontroller runs a CompositeController (ASYA_FLEET=1), and what the
// real Metacontroller pays (ASYA_METACONTROLLER_BIN), on the API tier's
// cluster (internal/testenv). Without either the package is skipped.
package cost

import (
	"fmt"
	"os"
	"testing"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/internal/testenv"
)

// env is the environment TestMain set up for the package's tests.
var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("ASYA_FLEET") != "1" && os.Getenv("ASYA_METACONTROLLER_BIN") == "" {
		fmt.Println("e2e/cost: skipped: the measurements run only when asked: ASYA_FLEET=1 or ASYA_METACONTROLLER_BIN (docs/performance.md)")
		os.Exit(0)
	}
	os.Exit(testenv.Run(m, &env))
}
