//go:build e2e

package node

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

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// The quick start names these; everything else comes from its commands.
const (
	quickStartNS      = "default"
	quickStartRelease = "asya-sync"
	// quickStartHost is the broker host examples/values-rabbitmq.yaml
	// ships with, which the README says to edit.
	quickStartHost = "rabbitmq.rabbitmq.svc.cluster.local"
)

// The README's two quick starts: the flat actor's, which installs
// everything, and the shorter one for a 0.3 actor on the same install.
const (
	quickStartSection       = "Quick start"
	quickStartLegacySection = "Quick start: an Asya 0.3 actor"
)

// quickStartActors are the example actors the quick starts apply, by file.
var quickStartActors = map[string]string{"examples/flat-actor.yaml": "text-analyzer", "examples/hello-actor.yaml": "hello"}

// TestNodeQuickStart runs the README's quick starts as printed, block by
// block, in a copy of the repository whose examples/values-rabbitmq.yaml has
// the broker's host edited in, as the README asks: the broker user, the
// Secrets, the chart with the example's values, the flat example actor and
// its handler, a message through the management API and the result read
// from the namespace's sink; then the 0.3 example on the same install, its
// result read from asya-happy-end. The node runs the images under the names
// the quick start prints (.ci/node.sh, quickstart_*); the driver plays
// Metacontroller. The service's pod runs the release image by digest
// (assertReleaseImage).
func TestNodeQuickStart(t *testing.T) {
	needNode(t)
	blocks := readmeShellBlocks(t, quickStartSection)
	if len(blocks) != 5 {
		t.Fatalf("README's %q has %d sh blocks, want 5 (render, broker user, install, send, read)", quickStartSection, len(blocks))
	}
	legacy := readmeShellBlocks(t, quickStartLegacySection)
	if len(legacy) != 2 {
		t.Fatalf("README's %q has %d sh blocks, want 2 (apply and send, read)", quickStartLegacySection, len(legacy))
	}
	dir := quickStartTree(t)

	_ = exec.Command("rabbitmqctl", "delete_user", "asya").Run() // a broker without the user
	t.Cleanup(func() { _ = exec.Command("rabbitmqctl", "delete_user", "asya").Run() })
	stop := playMetacontroller(t, quickStartNS)
	t.Cleanup(func() { quickStartTeardown(t, dir, stop) })

	for i, step := range []string{"broker user", "install"} {
		quickStartStep(t, dir, step, blocks[i+1], "text-analyzer")
	}
	sent := time.Now()
	quickStartStep(t, dir, "send", blocks[3], "text-analyzer")
	quickStartRead(t, dir, blocks[4], "text-analyzer", "quick-1", "map[characters:16 text:Asya runs actors words:3]")
	env.Timed("node: quick start, message sent → result read (KEDA from zero)", sent)

	quickStartStep(t, dir, "0.3 actor, apply and send", legacy[0], "hello")
	quickStartRead(t, dir, legacy[1], "hello", "quick-2", "map[greeting:hello, Asya]")

	// The chart's default image, which served all of the above, is the
	// release image make image built, by digest.
	assertReleaseImage(t, "asya-system", "app.kubernetes.io/instance="+quickStartRelease, releaseDigests(t)["ref"])
}

// quickStartStep runs one block; a failure reports the actor's pods.
func quickStartStep(t *testing.T, dir, step, block, actor string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	if out, err := quickStartRun(ctx, dir, block); err != nil {
		t.Fatalf("quick start, %s:\n%s\n%v\n%s\n%s", step, block, err, out, podReport(ctx, quickStartNS, "asya.sh/asya="+actor))
	}
	env.Timed("node: quick start, "+step, start)
}

// quickStartRead runs the read block again, as the README says, until it
// prints a message, which must be message id with the payload given.
func quickStartRead(t *testing.T, dir, block, actor, id, payload string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := quickStartRun(ctx, dir, block)
		if err != nil {
			t.Fatalf("quick start, read:\n%s\n%v\n%s", block, err, out)
		}
		if got, ok := quickStartResult(t, out); ok {
			if got.ID != id || fmt.Sprint(got.Payload) != payload {
				t.Fatalf("the read block printed %s, want message %s with payload %s", out, id, payload)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read block printed no message 3 min after %s's message was sent\n%s", actor, podReport(ctx, quickStartNS, "asya.sh/asya="+actor))
		}
		time.Sleep(2 * time.Second)
	}
}

// readmeShellBlocks returns the sh code blocks of the README's section.
func readmeShellBlocks(t *testing.T, section string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(env.Root, "README.md"))
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
		if out, err := exec.Command("cp", "-r", filepath.Join(env.Root, d), dir).CombinedOutput(); err != nil {
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
	edited := strings.ReplaceAll(string(values), quickStartHost, testenv.NodeIP)
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
		"PATH="+env.Bin+":"+os.Getenv("PATH"),
		"KUBECONFIG="+env.Cluster.Kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(env.Work, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(env.Work, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(env.Work, "helm", "data"),
		"RABBITMQ_API=http://127.0.0.1:15672",
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// quickStartResult decodes what the management API's get printed: the
// first message's envelope, if there is one.
func quickStartResult(t *testing.T, out string) (testenv.Envelope, bool) {
	t.Helper()
	var msgs []struct {
		Payload string `json:"payload"`
	}
	if err := json.Unmarshal([]byte(out), &msgs); err != nil {
		t.Fatalf("the read block printed %q, not the management API's list of messages: %v", out, err)
	}
	if len(msgs) == 0 {
		return testenv.Envelope{}, false
	}
	return testenv.DecodeEnvelope(t, []byte(msgs[0].Payload)), true
}

// playMetacontroller does what Metacontroller does once the chart's
// CompositeController exists: calls its hooks for every actor in ns, every
// second, until stopped.
func playMetacontroller(t *testing.T, ns string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var d *testenv.Driver
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
				d, err = chartDriver(ctx, quickStartRelease)
				logOnce(err)
			}
			if d != nil {
				actors, err := env.Cluster.Client.List(ctx, testenv.ActorGVR(), ns, "")
				logOnce(err)
				for _, a := range actors {
					_, err := d.Reconcile(ctx, ns, testenv.Str(a, "metadata", "name"))
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

// quickStartTeardown deletes the example actors (the driver finalizes
// them), stops the driver, uninstalls the chart, and removes what no
// finalize removes: the queues the quick starts made or read and the
// namespace's sink, sump and exchange.
func quickStartTeardown(t *testing.T, dir string, stop func()) {
	ctx := context.Background()
	for file, actor := range quickStartActors {
		if out, err := quickStartRun(ctx, dir, "kubectl delete -f "+file+" --ignore-not-found --wait=false"); err != nil {
			t.Errorf("delete %s: %v\n%s", file, err, out)
		}
		deadline := time.Now().Add(90 * time.Second)
		for {
			_, err := env.Cluster.Client.Get(ctx, testenv.ActorGVR(), quickStartNS, actor)
			pods, _ := env.Cluster.Client.List(ctx, podsGVR, quickStartNS, "asya.sh/asya="+actor)
			if testenv.IsStatus(err, 404) && len(pods) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the example actor %s or its pods still there 90 s after delete\n%s", actor, podReport(ctx, quickStartNS, "asya.sh/asya="+actor))
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	stop()
	if out, err := quickStartRun(ctx, dir, "helm uninstall asya-sync -n asya-system --wait --timeout 60s"); err != nil {
		t.Errorf("helm uninstall: %v\n%s", err, out)
	}
	for _, q := range []string{"asya-happy-end", "asya-" + quickStartNS + "-x-sink", "asya-" + quickStartNS + "-x-sump"} {
		_, _ = quickStartRun(ctx, dir, `curl -fsS -u guest:guest -X DELETE "$RABBITMQ_API/api/queues/%2F/`+q+`"`)
	}
	_, _ = quickStartRun(ctx, dir, `curl -fsS -u guest:guest -X DELETE "$RABBITMQ_API/api/exchanges/%2F/asya-`+quickStartNS+`"`)
}
