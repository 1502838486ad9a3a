//go:build e2e

// Package api is the API tier: asya-sync against a real kube-apiserver and
// etcd with the CRDs, KEDA's operator and admission webhooks, the local
// brokers, and a driver that applies the hooks' answers the way
// Metacontroller does (internal/testenv). No pod runs. Run it with
// `.ci/e2e.sh test` (docs/testing.md); a new test of this tier is one
// file here.
package api

import (
	"os"
	"testing"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/internal/testenv"
)

// env is the environment TestMain set up for the package's tests.
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }
