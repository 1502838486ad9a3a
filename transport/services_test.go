package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

// The brokers the integration tests use, started by .ci/services.sh.
var (
	rabbitURL           = envOr("ASYA_TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/")
	rabbitManagementURL = envOr("ASYA_TEST_RABBITMQ_MANAGEMENT_URL", "http://127.0.0.1:15672")
	sqsEndpoint         = envOr("ASYA_TEST_SQS_ENDPOINT", "http://127.0.0.1:9324")
)

// runID keeps the names of one test run apart from any other run's.
var (
	runID      = randomHex(4)
	nameSerial atomic.Int64
	// testExchange is shared by the run's RabbitMQ tests and deleted after.
	testExchange = "asya-test-" + runID
)

func TestMain(m *testing.M) {
	// The SQS emulator accepts any credentials; the SDK needs some.
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	code := m.Run()
	deleteTestExchange()
	os.Exit(code)
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// actorName is unique per test run and call.
func actorName(label string) string {
	return fmt.Sprintf("t%s-%s-%d", runID, label, nameSerial.Add(1))
}

// needService skips the test when the service is not reachable, or fails
// it when ASYA_REQUIRE_INTEGRATION=1 (as in CI).
func needService(t *testing.T, name, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: bad URL %q: %v", name, rawURL, err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err == nil {
		conn.Close()
		return
	}
	msg := fmt.Sprintf("%s not reachable at %s (%v); run .ci/services.sh", name, u.Host, err)
	if os.Getenv("ASYA_REQUIRE_INTEGRATION") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func needRabbitMQ(t *testing.T) {
	t.Helper()
	needService(t, "RabbitMQ", rabbitURL)
}

func needRabbitManagement(t *testing.T) {
	t.Helper()
	needRabbitMQ(t)
	needService(t, "RabbitMQ management API", rabbitManagementURL)
}

func needSQS(t *testing.T) {
	t.Helper()
	needService(t, "local-aws-sqs", sqsEndpoint)
}

// rabbitConfig is a transport configuration for the test broker, with the
// password in a file as in production.
func rabbitConfig(t *testing.T, change ...func(*config.RabbitMQ)) config.RabbitMQ {
	t.Helper()
	uri, err := amqp.ParseURI(rabbitURL)
	if err != nil {
		t.Fatalf("ASYA_TEST_RABBITMQ_URL: %v", err)
	}
	passwordFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(passwordFile, []byte(uri.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.RabbitMQ{
		Host: uri.Host, Port: uri.Port, VHost: uri.Vhost, Username: uri.Username,
		PasswordFile: passwordFile, Exchange: testExchange,
		Queues: config.Queues{DLQ: config.DLQ{MaxRetryCount: 3}},
	}
	for _, c := range change {
		c(&cfg)
	}
	return cfg
}

func withDLQ(c *config.RabbitMQ)        { c.Queues.DLQ.Enabled = true }
func withManagement(c *config.RabbitMQ) { c.ManagementURL = rabbitManagementURL }
func withoutAutoCreate(c *config.RabbitMQ) {
	off := false
	c.Queues.AutoCreate = &off
}

// newRabbitMQ opens a transport closed at the end of the test.
func newRabbitMQ(t *testing.T, change ...func(*config.RabbitMQ)) *RabbitMQ {
	t.Helper()
	needRabbitMQ(t)
	r := NewRabbitMQ("test-"+randomHex(3), rabbitConfig(t, change...), nil)
	t.Cleanup(func() { r.Close() })
	return r
}

// amqpChannel is a channel of the test's own, to act on the broker by hand.
func amqpChannel(t *testing.T) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(rabbitURL)
	if err != nil {
		t.Fatalf("dial %s: %v", rabbitURL, err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// queueExists checks by passive declare, on a channel of its own because
// a missing queue closes the channel.
func queueExists(t *testing.T, queue string) (messages int, exists bool) {
	t.Helper()
	ch := amqpChannel(t)
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if isAMQPCode(err, amqp.NotFound) {
		return 0, false
	}
	if err != nil {
		t.Fatalf("passive declare %s: %v", queue, err)
	}
	return q.Messages, true
}

func deleteQueueByHand(t *testing.T, queue string) {
	t.Helper()
	if _, err := amqpChannel(t).QueueDelete(queue, false, false, false); err != nil {
		t.Fatalf("delete %s: %v", queue, err)
	}
}

// cleanupRabbitQueues deletes the actors' queues at the end of the test.
func cleanupRabbitQueues(t *testing.T, actors ...string) {
	t.Cleanup(func() {
		conn, err := amqp.Dial(rabbitURL)
		if err != nil {
			return
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		for _, actor := range actors {
			ch.QueueDelete(v1alpha1.QueueName(actor), false, false, false)
			ch.QueueDelete(dlqName(actor), false, false, false)
		}
	})
}

func deleteTestExchange() {
	conn, err := amqp.Dial(rabbitURL)
	if err != nil {
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		ch.ExchangeDelete(testExchange, false, false)
	}
}

// management reads a path of the RabbitMQ management API into out.
func management(t *testing.T, path string, out any) {
	t.Helper()
	managementDo(t, http.MethodGet, path, out)
}

func managementDelete(t *testing.T, path string) {
	t.Helper()
	managementDo(t, http.MethodDelete, path, nil)
}

func managementDo(t *testing.T, method, path string, out any) {
	t.Helper()
	uri, err := amqp.ParseURI(rabbitURL)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, strings.TrimRight(rabbitManagementURL, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(uri.Username, uri.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		return
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// brokerConnections counts the broker's connections with the given name.
func brokerConnections(t *testing.T, name string) int {
	t.Helper()
	var conns []struct {
		ClientProperties struct {
			ConnectionName string `json:"connection_name"`
		} `json:"client_properties"`
	}
	management(t, "/api/connections", &conns)
	n := 0
	for _, c := range conns {
		if c.ClientProperties.ConnectionName == name {
			n++
		}
	}
	return n
}

// eventually polls check until it returns true or the time is up.
func eventually(t *testing.T, within time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantReason fails unless err is a transport Error with that reason.
func wantReason(t *testing.T, err error, reason string) *Error {
	t.Helper()
	te := AsError(err)
	if te == nil || te.Reason != reason {
		t.Fatalf("error = %v, want reason %s", err, reason)
	}
	return te
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ now atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// deref shows an unknown count as -1.
func deref(p *int64) string {
	if p == nil {
		return "-1"
	}
	return fmt.Sprint(*p)
}

func itoa(n int) string { return fmt.Sprint(n) }
