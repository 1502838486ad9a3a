package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
)

// RabbitManagementURL is the test broker's management API.
func RabbitManagementURL() string {
	return envOr("ASYA_TEST_RABBITMQ_MANAGEMENT_URL", "http://127.0.0.1:15672")
}

// SQSEndpoint is the SQS emulator's URL.
func SQSEndpoint() string { return envOr("ASYA_TEST_SQS_ENDPOINT", "http://127.0.0.1:9324") }

// PubSubEndpoint is the Pub/Sub emulator's host:port (pstest, which
// .ci/services.sh starts).
func PubSubEndpoint() string { return envOr("ASYA_TEST_PUBSUB_ENDPOINT", "127.0.0.1:8085") }

// PubSubProject is the project the tests use on the emulator, which
// takes any.
const PubSubProject = "asya-test"

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// UseTestAWSCredentials sets the credentials the SQS emulator accepts
// (any) unless the environment has some; the SDK needs some. Call it from
// TestMain.
func UseTestAWSCredentials() {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_EC2_METADATA_DISABLED": "true"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
}

// needService skips the test when the service is not reachable, or fails
// it when ASYA_REQUIRE_INTEGRATION=1 (as in CI).
func needService(t testing.TB, name, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: bad URL %q: %v", name, rawURL, err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		Missing(t, fmt.Sprintf("%s not reachable at %s", name, u.Host), err)
		return
	}
	conn.Close()
}

// NeedRabbitMQ skips or fails the test without the test broker.
func NeedRabbitMQ(t testing.TB) {
	t.Helper()
	needService(t, "RabbitMQ", RabbitURL())
}

// NeedRabbitManagement skips or fails the test without the test broker's
// management API.
func NeedRabbitManagement(t testing.TB) {
	t.Helper()
	NeedRabbitMQ(t)
	needService(t, "RabbitMQ management API", RabbitManagementURL())
}

// NeedSQS skips or fails the test without the SQS emulator.
func NeedSQS(t testing.TB) {
	t.Helper()
	needService(t, "local-aws-sqs", SQSEndpoint())
}

// NeedPubSub skips or fails the test without the Pub/Sub emulator.
func NeedPubSub(t testing.TB) {
	t.Helper()
	needService(t, "the Pub/Sub emulator (pstest)", "grpc://"+PubSubEndpoint())
}

// RabbitLogin is how the service logs in to the test broker: the
// password in a file, as in production.
type RabbitLogin struct {
	Host, VHost, Username, PasswordFile string
	Port                                int
}

// NewRabbitLogin writes the test broker's password to a file of the test.
func NewRabbitLogin(t testing.TB) RabbitLogin {
	t.Helper()
	uri, err := amqp.ParseURI(RabbitURL())
	if err != nil {
		t.Fatalf("ASYA_TEST_RABBITMQ_URL: %v", err)
	}
	passwordFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(passwordFile, []byte(uri.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return RabbitLogin{Host: uri.Host, Port: uri.Port, VHost: uri.Vhost, Username: uri.Username, PasswordFile: passwordFile}
}

// RunID keeps the names of one test run apart from any other run's.
var (
	RunID      = randomHex(4)
	nameSerial atomic.Int64
)

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ActorName is unique per test run and call.
func ActorName(label string) string {
	return fmt.Sprintf("t%s-%s-%d", RunID, label, nameSerial.Add(1))
}

// Context ends with the test, or after 20 seconds.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls check until it returns true or the time is up.
func Eventually(t testing.TB, within time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FakeClock is a clock the test moves by hand.
type FakeClock struct{ now atomic.Int64 }

// NewFakeClock starts at 2026-01-01 UTC.
func NewFakeClock() *FakeClock {
	c := &FakeClock{}
	c.now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *FakeClock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *FakeClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// Management calls the RabbitMQ management API as the test broker's user
// and decodes the answer into out, unless out is nil.
func Management(t testing.TB, method, path string, out any) {
	t.Helper()
	ManagementSend(t, method, path, nil, out)
}

// ManagementSend is Management with a JSON request body, unless in is nil.
func ManagementSend(t testing.TB, method, path string, in, out any) {
	t.Helper()
	uri, err := amqp.ParseURI(RabbitURL())
	if err != nil {
		t.Fatal(err)
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimRight(RabbitManagementURL(), "/")+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(uri.Username, uri.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		return
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
}

// RabbitVHost makes the vhost and a user of it with the password, and
// lets the test broker's own user in too (to look at its queues); all
// idempotent. It returns the user's AMQP URL on the test broker.
func RabbitVHost(t testing.TB, vhost, user, password string) string {
	t.Helper()
	NeedRabbitManagement(t)
	escaped := url.PathEscape(vhost)
	ManagementSend(t, http.MethodPut, "/api/vhosts/"+escaped, map[string]any{}, nil)
	ManagementSend(t, http.MethodPut, "/api/users/"+url.PathEscape(user), map[string]any{"password": password, "tags": ""}, nil)
	uri, err := amqp.ParseURI(RabbitURL())
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"configure": ".*", "write": ".*", "read": ".*"}
	for _, u := range []string{user, uri.Username} {
		ManagementSend(t, http.MethodPut, "/api/permissions/"+escaped+"/"+url.PathEscape(u), all, nil)
	}
	uri.Username, uri.Password, uri.Vhost = user, password, vhost
	return uri.String()
}

// BrokerConnections counts the broker's connections with the given name.
func BrokerConnections(t testing.TB, name string) int {
	t.Helper()
	var conns []struct {
		ClientProperties struct {
			ConnectionName string `json:"connection_name"`
		} `json:"client_properties"`
	}
	Management(t, http.MethodGet, "/api/connections", &conns)
	n := 0
	for _, c := range conns {
		if c.ClientProperties.ConnectionName == name {
			n++
		}
	}
	return n
}

// CloseBrokerConnections has the broker close every connection with the
// given name, once it lists one (within the time given).
func CloseBrokerConnections(t testing.TB, name string, within time.Duration) {
	t.Helper()
	var conns []struct {
		Name             string `json:"name"`
		ClientProperties struct {
			ConnectionName string `json:"connection_name"`
		} `json:"client_properties"`
	}
	Eventually(t, within, "connection "+name+" listed by the broker", func() bool {
		Management(t, http.MethodGet, "/api/connections", &conns)
		for _, c := range conns {
			if c.ClientProperties.ConnectionName == name {
				return true
			}
		}
		return false
	})
	for _, c := range conns {
		if c.ClientProperties.ConnectionName == name {
			Management(t, http.MethodDelete, "/api/connections/"+url.PathEscape(c.Name), nil)
		}
	}
}
