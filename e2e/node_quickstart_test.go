//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The quick start names these; everything else comes from its commands.
const (
	quickStartNS       = "default"
	quickStartRelease  = "asya-sync"
	quickStartSelector = "app.kubernetes.io/instance=" + quickStartRelease
	// quickStartHost is the broker host examples/values-rabbitmq.yaml
	// ships with, which the README says to edit.
	quickStartHost = "rabbitmq.rabbitmq.svc.cluster.local"
)

// TestNodeQuickStart runs the README's quick start as printed, block by
// block, in a copy of the repository whose examples/values-rabbitmq.yaml has
// the broker's host edited in, as the README asks: the broker user, the
// Secrets, the chart with the example's values, the example actor and its
// handler, a message through the management API, and the result read from
// asya-happy-end. The node runs the images under the names the quick start
// prints (.ci/node.sh, quickstart_*); the driver plays Metacontroller.
func TestNodeQuickStart(t *testing.T) {
	needNode(t)
	blocks := readmeShellBlocks(t, "Quick start")
	if len(blocks) != 5 {
		t.Fatalf("README's quick start has %d sh blocks, want 5 (render, broker user, install, send, read)", len(blocks))
	}
	dir := quickStartTree(t)
	ctx := context.Background()

	_ = exec.Command("rabbitmqctl", "delete_user", "asya").Run() // a broker without the user
	t.Cleanup(func() { _ = exec.Command("rabbitmqctl", "delete_user", "asya").Run() })
	stop := playMetacontroller(t, quickStartNS)
	t.Cleanup(func() { quickStartTeardown(t, dir, stop) })

	for i, step := range []string{"broker user", "install"} {
		start := time.Now()
		if out, err := quickStartRun(ctx, dir, blocks[i+1]); err != nil {
			t.Fatalf("quick start, %s:\n%s\n%v\n%s\n%s", step, blocks[i+1], err, out, podReport(ctx, quickStartNS, "asya.sh/asya=hello"))
		}
		env.timed("node: quick start, "+step, start)
	}
	sent := time.Now()
	if out, err := quickStartRun(ctx, dir, blocks[3]); err != nil {
		t.Fatalf("quick start, send:\n%s\n%v\n%s", blocks[3], err, out)
	}
	// The README says to read again until the result is there.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := quickStartRun(ctx, dir, blocks[4])
		if err != nil {
			t.Fatalf("quick start, read:\n%s\n%v\n%s", blocks[4], err, out)
		}
		if got, ok := quickStartResult(t, out); ok {
			if got.ID != "quick-1" || fmt.Sprint(got.Payload) != "map[greeting:hello, Asya]" {
				t.Fatalf("asya-happy-end holds %s, want message quick-1 with payload {greeting: hello, Asya}", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing on asya-happy-end 3 min after the message was sent\n%s", podReport(ctx, quickStartNS, "asya.sh/asya=hello"))
		}
		time.Sleep(2 * time.Second)
	}
	env.timed("node: quick start, message sent → result read (KEDA from zero)", sent)
}

// readmeShellBlocks returns the sh code blocks of the README's section.
func readmeShellBlocks(t *testing.T, section string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(env.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var block *strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## "+section
		case !in:
		case block == nil && line == "```sh":
			block = &strings.Builder{}
		case block != nil && line == "```":
			blocks = append(blocks, block.String())
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// quickStartTree is a copy of the chart and the examples, with the
// broker's host in examples/values-rabbitmq.yaml edited to the node's
// relay, which is the edit the README asks for.
func quickStartTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"chart", "examples"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(env.root, d), dir).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", d, err, out)
		}
	}
	path := filepath.Join(dir, "examples", "values-rabbitmq.yaml")
	values, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(values), quickStartHost); n != 2 {
		t.Fatalf("examples/values-rabbitmq.yaml names %s %d times, want 2 (host, managementURL)", quickStartHost, n)
	}
	edited := strings.ReplaceAll(string(values), quickStartHost, nodeIP)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// quickStartRun runs a block as a user's shell would, with kubectl and helm
// on the PATH, against the test cluster and the local broker.
func quickStartRun(ctx context.Context, dir, block string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"PATH="+env.bin+":"+os.Getenv("PATH"),
		"KUBECONFIG="+env.cluster.kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(env.work, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(env.work, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(env.work, "helm", "data"),
		"RABBITMQ_API=http://127.0.0.1:15672",
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// quickStartResult decodes what the management API's get printed: the
// first message's envelope, if there is one.
func quickStartResult(t *testing.T, out string) (envelope, bool) {
	t.Helper()
	var msgs []struct {
		Payload string `json:"payload"`
	}
	if err := json.Unmarshal([]byte(out), &msgs); err != nil {
		t.Fatalf("the read block printed %q, not the management API's list of messages: %v", out, err)
	}
	if len(msgs) == 0 {
		return envelope{}, false
	}
	return decodeEnvelope(t, []byte(msgs[0].Payload)), true
}

// playMetacontroller does what Metacontroller does once the chart's
// CompositeController exists: calls its hooks for every actor in ns, every
// second, until stopped.
func playMetacontroller(t *testing.T, ns string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var d *driver
		last := ""
		logOnce := func(err error) {
			if err != nil && err.Error() != last && ctx.Err() == nil {
				t.Logf("metacontroller: %v", err)
				last = err.Error()
			}
		}
		for ctx.Err() == nil {
			if d == nil {
				var err error
				d, err = chartDriver(ctx, quickStartRelease, "asya-system", quickStartSelector)
				logOnce(err)
			}
			if d != nil {
				actors, err := env.cluster.client.list(ctx, actorGVR(), ns, "")
				logOnce(err)
				for _, a := range actors {
					_, err := d.reconcile(ctx, ns, str(a, "metadata", "name"))
					logOnce(err)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// quickStartTeardown deletes the example actor (the driver finalizes it),
// stops the driver, and uninstalls the chart.
func quickStartTeardown(t *testing.T, dir string, stop func()) {
	ctx := context.Background()
	if out, err := quickStartRun(ctx, dir, "kubectl delete -f examples/hello-actor.yaml --ignore-not-found --wait=false"); err != nil {
		t.Errorf("delete the example: %v\n%s", err, out)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := env.cluster.client.get(ctx, actorGVR(), quickStartNS, "hello")
		pods, _ := env.cluster.client.list(ctx, podsGVR, quickStartNS, "asya.sh/asya=hello")
		if isStatus(err, 404) && len(pods) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the example actor or its pods still there 90 s after delete\n%s", podReport(ctx, quickStartNS, "asya.sh/asya=hello"))
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	stop()
	if out, err := quickStartRun(ctx, dir, "helm uninstall asya-sync -n asya-system --wait --timeout 60s"); err != nil {
		t.Errorf("helm uninstall: %v\n%s", err, out)
	}
	_, _ = quickStartRun(ctx, dir, `curl -fsS -u guest:guest -X DELETE "$RABBITMQ_API/api/queues/%2F/asya-happy-end"`)
}
