//go:build e2e

package api

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestKubectlWaitForReady: `kubectl wait --for=condition=Ready`, as tools
// that follow the kstatus conventions do, returns for a healthy actor and
// times out on a broken one.
func TestKubectlWaitForReady(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	const ns = "e2e-wait"
	testenv.EnsureNamespace(t, ctx, ns, true)
	healthy := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	testenv.MapAt(healthy, "metadata")["name"] = "healthy"
	testenv.MapAt(healthy, "spec")["transport"] = "rabbitmq"
	testenv.MapAt(healthy, "spec", "workload")["replicas"] = 1
	createActor(t, ctx, healthy)
	// The Deployment controller reports its one replica ready.
	reportRunning(t, ctx, ns, "healthy", 1)
	converge(t, ctx, ns, "healthy")

	broken := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "no-runtime.yaml"), ns)
	testenv.MapAt(broken, "metadata")["name"] = "broken"
	createActor(t, ctx, broken)

	if out, err := kubectlWait(ns, "healthy", "20s"); err != nil {
		t.Errorf("kubectl wait on a healthy actor: %v\n%s\nstatus: %s", err, out, testenv.MustJSON(testenv.GetActor(t, ctx, ns, "healthy")["status"]))
	}
	start := time.Now()
	out, err := kubectlWait(ns, "broken", "3s")
	if err == nil || !strings.Contains(out, "timed out") {
		t.Errorf("kubectl wait on a broken actor: %v, want it to time out\n%s", err, out)
	}
	if time.Since(start) < 3*time.Second {
		t.Errorf("kubectl wait on a broken actor returned after %s, before its timeout", time.Since(start))
	}
	if c := conditions(testenv.GetActor(t, ctx, ns, "broken"))["Ready"]; testenv.Str(c, "status") != "False" || testenv.Str(c, "reason") != "InvalidSpec" {
		t.Errorf("the broken actor's Ready = %s, want False, InvalidSpec", testenv.MustJSON(c))
	}
}

func kubectlWait(ns, name, timeout string) (string, error) {
	out, err := exec.Command(filepath.Join(env.Bin, "kubectl"), "--kubeconfig", env.Cluster.Kubeconfig, "wait",
		"--for=condition=Ready", "asyncactor/"+name, "-n", ns, "--timeout="+timeout).CombinedOutput()
	return string(out), err
}
