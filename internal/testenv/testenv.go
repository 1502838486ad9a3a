// Package testenv finds the real services integration tests run against
// (started by .ci/services.sh) and skips, or with
// ASYA_REQUIRE_INTEGRATION=1 fails, when one is missing.
//
// Built with -tags e2e, it is also what the e2e tiers (e2e/api, e2e/node,
// e2e/metacontroller, e2e/cost) share: a real kube-apiserver and etcd with
// the CRDs, KEDA, the asya-sync service, the driver that plays
// Metacontroller's part, the node tier's kubelet and containerd, the real
// Metacontroller run by hand, and the helpers the tests call on them. Each
// tier's TestMain calls Run (env.go); docs/testing.md, "Which folder is
// which tier", says which tier is where.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
)

// RabbitURL is the test broker's AMQP URL.
func RabbitURL() string {
	if u := os.Getenv("ASYA_TEST_RABBITMQ_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// Missing skips the test, or fails it when integration is required.
func Missing(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("ASYA_REQUIRE_INTEGRATION") == "1" {
		t.Fatalf("%s: %v (ASYA_REQUIRE_INTEGRATION=1)", what, err)
	}
	t.Skipf("%s: %v; run .ci/services.sh", what, err)
}

// Rabbit connects to the test broker, closing the connection after the test.
func Rabbit(t testing.TB) *amqp.Connection {
	t.Helper()
	conn, err := amqp.Dial(RabbitURL())
	if err != nil {
		Missing(t, "RabbitMQ not reachable at "+RabbitURL(), err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// QueueExists reports whether the queue is declared on the broker; any
// answer but "not found" fails the test.
func QueueExists(t testing.TB, conn *amqp.Connection, queue string) bool {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	_, err = ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	var ae *amqp.Error
	switch {
	case err == nil:
		return true
	case errors.As(err, &ae) && ae.Code == amqp.NotFound:
		return false
	}
	t.Fatalf("passive declare %s: %v", queue, err)
	return false
}

// OwnerRecord is the exchange that records who owns a queue asya-sync
// declared (transport/rabbitmq/record.go, which tests that the two agree).
func OwnerRecord(queue string) string { return "asya-sync.owner." + queue }

// DeleteQueue removes a queue a test left behind, and its owner record.
func DeleteQueue(t testing.TB, conn *amqp.Connection, queue string) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("delete %s: %v", queue, err)
		return
	}
	defer ch.Close()
	if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
		t.Errorf("delete %s: %v", queue, err)
	}
	if err := ch.ExchangeDelete(OwnerRecord(queue), false, false); err != nil {
		t.Errorf("delete %s: %v", OwnerRecord(queue), err)
	}
}

// UniqueName makes an actor name no other test run uses.
func UniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// ClosedPort is a loopback port nothing listens on.
func ClosedPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// Metrics gathers reg into metric name -> series -> value, a series written
// as in the text format (name{label="value",...}, labels sorted); a
// histogram appears as its _count series.
func Metrics(t testing.TB, reg prometheus.Gatherer) map[string]map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		series := map[string]float64{}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key, v := f.GetName(), m.GetCounter().GetValue()+m.GetGauge().GetValue()
			if h := m.GetHistogram(); h != nil {
				key, v = key+"_count", float64(h.GetSampleCount())
			}
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			series[key] = v
		}
		out[f.GetName()] = series
	}
	return out
}

// Publish puts one message on the queue through the default exchange and
// waits for the broker's confirm, so a count read afterwards includes it.
func Publish(t testing.TB, conn *amqp.Connection, queue string) {
	t.Helper()
	PublishBody(t, conn, queue, []byte("keep me"))
}

// PublishBody is Publish with the message body given, sent persistent.
func PublishBody(t testing.TB, conn *amqp.Connection, queue string, body []byte) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirm, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), "", queue, true, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, Body: body})
	if err != nil || !confirm.Wait() {
		t.Fatalf("publish to %s: %v", queue, err)
	}
}

// Messages is the number of messages in the queue, or -1 when there is no
// such queue.
func Messages(t testing.TB, conn *amqp.Connection, queue string) int {
	t.Helper()
	if !QueueExists(t, conn, queue) {
		return -1
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return q.Messages
}
