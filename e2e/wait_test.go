//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKubectlWaitForReady: `kubectl wait --for=condition=Ready`, as tools
// that follow the kstatus conventions do, returns for a healthy actor and
// times out on a broken one.
func TestKubectlWaitForReady(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	const ns = "e2e-wait"
	ensureNamespace(t, ctx, ns, true)
	healthy := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	mapAt(healthy, "metadata")["name"] = "healthy"
	mapAt(healthy, "spec")["transport"] = "rabbitmq"
	mapAt(healthy, "spec", "workload")["replicas"] = 1
	createActor(t, ctx, healthy)
	// The Deployment controller reports its one replica ready.
	reportRunning(t, ctx, ns, "healthy", 1)
	converge(t, ctx, ns, "healthy")

	broken := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "no-runtime.yaml"), ns)
	mapAt(broken, "metadata")["name"] = "broken"
	createActor(t, ctx, broken)

	if out, err := kubectlWait(ns, "healthy", "20s"); err != nil {
		t.Errorf("kubectl wait on a healthy actor: %v\n%s\nstatus: %s", err, out, mustJSON(getActor(t, ctx, ns, "healthy")["status"]))
	}
	start := time.Now()
	out, err := kubectlWait(ns, "broken", "3s")
	if err == nil || !strings.Contains(out, "timed out") {
		t.Errorf("kubectl wait on a broken actor: %v, want it to time out\n%s", err, out)
	}
	if time.Since(start) < 3*time.Second {
		t.Errorf("kubectl wait on a broken actor returned after %s, before its timeout", time.Since(start))
	}
	if c := conditions(getActor(t, ctx, ns, "broken"))["Ready"]; str(c, "status") != "False" || str(c, "reason") != "InvalidSpec" {
		t.Errorf("the broken actor's Ready = %s, want False, InvalidSpec", mustJSON(c))
	}
}

func kubectlWait(ns, name, timeout string) (string, error) {
	out, err := exec.Command(filepath.Join(env.bin, "kubectl"), "--kubeconfig", env.cluster.kubeconfig, "wait",
		"--for=condition=Ready", "asyncactor/"+name, "-n", ns, "--timeout="+timeout).CombinedOutput()
	return string(out), err
}
