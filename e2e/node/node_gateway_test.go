//go:build e2e

package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
)

// gatewayExchange is the exchange docs/install.md tells the gateway of
// namespace ns to publish to, on the node service's transport, whose
// exchange is nodeExchange: the document's example is for the default
// exchange, whose namespace's exchange is <exchange>-<namespace>.
func gatewayExchange(t *testing.T, ns string) string {
	t.Helper()
	block, err := testenv.DocFence(filepath.Join(env.Root, "docs", "install.md"), "## 5. Upstream's gateway (optional)", "yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	var gw struct{ Env []corev1.EnvVar }
	if err := yaml.UnmarshalStrict([]byte(block), &gw); err != nil {
		t.Fatalf("docs/install.md, the gateway's environment: %v", err)
	}
	got := map[string]string{}
	for _, e := range gw.Env {
		got[e.Name] = e.Value
	}
	docNS, docExchange := got["ASYA_NAMESPACE"], got["ASYA_RABBITMQ_EXCHANGE"]
	if docNS == "" || docExchange != rabbitmq.DefaultExchange+"-"+docNS {
		t.Fatalf("docs/install.md gives the gateway of namespace %q the exchange %q: not <exchange>-<namespace>", docNS, docExchange)
	}
	return nodeExchange + "-" + ns
}

// gatewayPublish publishes m as upstream's gateway does (asya-gateway
// internal/queue/channel_pool.go and rabbitmq_pooled.go at a7cec2a): its
// channel declares the exchange (topic, durable, no arguments), which
// must not fail, then the envelope goes out persistent, as JSON, keyed by
// route.curr, without mandatory, so that nothing tells it of a message
// routed nowhere.
func gatewayPublish(t *testing.T, ctx context.Context, exchange string, m testenv.Obj) {
	t.Helper()
	body, _ := json.Marshal(m)
	curr := testenv.Str(m, "route", "curr")
	testenv.WithChannel(t, func(ch *amqp.Channel) error {
		if err := ch.ExchangeDeclare(exchange, "topic", true, false, false, false, nil); err != nil {
			return fmt.Errorf("the gateway's declare of %s: %w", exchange, err)
		}
		return ch.PublishWithContext(ctx, exchange, curr, false, false,
			amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/json", Body: body})
	})
}

// takeFrom drains queue and returns what it held.
func takeFrom(t *testing.T, queue string) []testenv.Envelope {
	t.Helper()
	var out []testenv.Envelope
	testenv.WithChannel(t, func(ch *amqp.Channel) error {
		for {
			d, ok, err := ch.Get(queue, true)
			if err != nil || !ok {
				return err
			}
			out = append(out, testenv.DecodeEnvelope(t, d.Body))
		}
	})
	return out
}

// nodeServiceMetric is the value of a series the node service's Ready pod
// serves on its plain metrics port, or -1 when it serves none.
func nodeServiceMetric(ctx context.Context, series string) float64 {
	pods, err := env.Cluster.Client.List(ctx, podsGVR, nodeServiceNS, nodeServiceSelector)
	if err != nil {
		return -1
	}
	for _, p := range pods {
		if !podReady(p) {
			continue
		}
		resp, err := http.Get("http://" + testenv.Str(p, "status", "podIP") + ":9090/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, series+" "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
	}
	return -1
}

// TestNodeFlatGateway: a publisher that does what upstream's gateway does,
// configured as docs/install.md says (ASYA_RABBITMQ_EXCHANGE is the
// namespace's exchange), reaches a flat actor on RabbitMQ, whose result
// reaches the namespace's sink. A route naming an actor that does not
// exist is not dropped: it lands in asya-<namespace>.unroutable, which
// every flat actor of the namespace reports in its status and the
// service's metrics count.
func TestNodeFlatGateway(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	b := nodeBrokers[0]
	ns := nodeNamespace(t, ctx, "node-e2e-flat-gateway", nil)
	catch := "asya-" + ns + ".unroutable"
	exchange := gatewayExchange(t, ns)
	sink := flatEnd(t, ctx, b, ns, "x-sink")
	runReadyActor(t, ctx, d, flatActor(ns, "doubler", "", "handlers.process"))
	unroutable := func(want int64) func(testenv.Obj) error {
		return func(s testenv.Obj) error {
			u := testenv.MapAt(s, "unroutable")
			n, _ := u["messages"].(int64)
			if f, ok := u["messages"].(float64); ok {
				n = int64(f)
			}
			if testenv.Str(u, "queue") != catch || n != want || testenv.Str(u, "message") != "" {
				return fmt.Errorf("unroutable %s, want %d messages in %s", testenv.MustJSON(u), want, catch)
			}
			return nil
		}
	}
	awaitStatus(t, ctx, d, ns, "doubler", "Running", time.Minute, unroutable(0))

	m := flatMessage(testenv.Obj{"n": 1}, "doubler")
	start := time.Now()
	gatewayPublish(t, ctx, exchange, m)
	sink.await(t, ctx, 30*time.Second, m["id"].(string))
	env.Timed("node: gateway → flat actor → sink", start)

	lost := flatMessage(testenv.Obj{"n": 2}, "no-such-actor")
	start = time.Now()
	gatewayPublish(t, ctx, exchange, lost)
	awaitStatus(t, ctx, d, ns, "doubler", "Running", 90*time.Second, unroutable(1))
	env.Timed("node: route to no actor → reported in the status", start)
	series := fmt.Sprintf(`asya_sync_unroutable_messages{queue=%q,transport="rabbitmq"}`, catch)
	testenv.Eventually(t, 30*time.Second, series+" 1", func() bool { return nodeServiceMetric(ctx, series) == 1 })

	got := takeFrom(t, catch)
	if len(got) != 1 || got[0].ID != lost["id"] || !strings.Contains(string(got[0].Raw), `"curr":"no-such-actor"`) {
		t.Errorf("%s held %d messages, want the one routed to no-such-actor: %v", catch, len(got), got)
	}
}
