//go:build e2e

// Package node is the node tier: the API tier's cluster (internal/testenv)
// with a kubelet, containerd and runc, the scheduler and the workload
// controllers, where the actors' pods run. Its tests are named TestNode*.
// Run it with `.ci/e2e.sh node` (docs/testing.md), which builds the node's
// pieces and sets ASYA_E2E_NODE=1; without it the tier is skipped.
package node

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
	if os.Getenv("ASYA_E2E_NODE") != "1" {
		fmt.Println("e2e/node: skipped: the node tier runs with ASYA_E2E_NODE=1 (.ci/e2e.sh node)")
		os.Exit(0)
	}
	os.Exit(testenv.Run(m, &env))
}
