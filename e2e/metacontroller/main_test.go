//go:build e2e

// Package metacontroller holds the tests run by hand against the real
// Metacontroller: the API tier's cluster (internal/testenv) with a
// Metacontroller built by hand, named by ASYA_METACONTROLLER_BIN and
// ASYA_METACONTROLLER_CRDS (docs/testing.md, "With the real Metacontroller,
// by hand"). Without them the package is skipped.
package metacontroller

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
	if os.Getenv("ASYA_METACONTROLLER_BIN") == "" {
		fmt.Println("e2e/metacontroller: skipped: runs the real Metacontroller: set ASYA_METACONTROLLER_BIN and ASYA_METACONTROLLER_CRDS (docs/testing.md)")
		os.Exit(0)
	}
	os.Exit(testenv.Run(m, &env))
}
