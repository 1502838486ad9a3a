//go:build e2e

package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestNodeStateProxy: a flat actor keeps a note through its state proxy,
// the test connector (e2e/connector) on a real Redis. The first message
// writes the note under the actor's mount; its pod is then deleted, and
// the second message, on the new pod, reads the note back. The note is a
// key in Redis, not a file of either pod.
func TestNodeStateProxy(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	b := nodeBrokers[0]
	redis := startRedis(t)
	ns := nodeNamespace(t, ctx, "node-e2e-state", nil)
	sink := flatEnd(t, ctx, b, ns, "x-sink")
	a := flatActor(ns, "notes", "", "handlers.notes")
	testenv.MapAt(a, "spec")["stateProxy"] = []any{testenv.Obj{"name": "notes", "mount": testenv.Obj{"path": "/state/notes"},
		"connector": testenv.Obj{"image": testenv.NodeImage("state-connector"), "env": []any{
			testenv.Obj{"name": "REDIS_URL", "value": "redis://" + redis + "/0"},
			testenv.Obj{"name": "STATE_PREFIX", "value": ns}}}}}
	runReadyActor(t, ctx, d, a)

	note := func(payload testenv.Obj) testenv.Envelope {
		t.Helper()
		m := flatMessage(payload, "notes")
		sendFlat(t, ctx, b, ns, "notes", m)
		return sink.await(t, ctx, time.Minute, m["id"].(string))[m["id"].(string)][0]
	}
	wrote := note(testenv.Obj{"note": "first", "text": "kept outside the pod"})
	if !strings.Contains(string(wrote.Raw), `"text":"kept outside the pod"`) {
		t.Fatalf("the write answered %s", wrote.Raw)
	}
	if got := redisGet(t, redis, ns+":first"); got != "kept outside the pod" {
		t.Errorf("Redis holds %q at %s:first, want the note", got, ns)
	}
	pods, err := env.Cluster.Client.List(ctx, podsGVR, ns, "asya.sh/asya=notes")
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods of notes: %d, %v", len(pods), err)
	}
	first := testenv.Str(pods[0], "metadata", "name")
	if err := env.Cluster.Client.Delete(ctx, podsGVR, ns, first); err != nil {
		t.Fatal(err)
	}
	awaitActor(t, ctx, d, ns, "notes", 2*time.Minute, "serving from a new pod", func(testenv.Obj) error {
		pods, _ := env.Cluster.Client.List(ctx, podsGVR, ns, "asya.sh/asya=notes")
		for _, p := range pods {
			if testenv.Str(p, "metadata", "name") != first && podReady(p) {
				return nil
			}
		}
		return fmt.Errorf("no ready pod but %s", first)
	})
	read := note(testenv.Obj{"note": "first"})
	if raw := string(read.Raw); !strings.Contains(raw, `"text":"kept outside the pod"`) || strings.Contains(raw, `"pod":"`+first+`"`) {
		t.Errorf("the read on a new pod answered %s, want the note written by %s", raw, first)
	}
}

// startRedis runs Debian's redis-server on the node's address, where the
// pods reach it, keeping nothing on disk; it returns host:port.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Missing(t, "redis-server (Debian package redis-server, which .ci/services.sh installs)", err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(testenv.NodeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--bind", testenv.NodeIP, "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--protected-mode", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort(testenv.NodeIP, strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// redisGet reads a string key with one RESP command; "" when it is unset.
func redisGet(t *testing.T, addr, key string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key)
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("GET %s: %q, %v", key, head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	if n < 0 {
		return ""
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}
