package rabbitmq

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/brokertest"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

func TestCatches(t *testing.T) {
	off := false
	flat := transport.Queue{Actor: "a", Namespace: "ml", Scoped: true}
	nested := transport.Queue{Actor: "a", Namespace: "ml"}
	tests := []struct {
		name         string
		settings     Settings
		q            transport.Queue
		want         []string
		wantUncaught string
	}{
		{"flat: the transport's exchange and the namespace's", Settings{Exchange: "asya", ManagementURL: "http://mq:15672"}, flat,
			[]string{"asya.unroutable", "asya-ml.unroutable"}, ""},
		{"nested: the transport's exchange", Settings{Exchange: "asya", ManagementURL: "http://mq:15672"}, nested,
			[]string{"asya.unroutable"}, ""},
		{"no management API, no policy", Settings{Exchange: "asya"}, flat,
			nil, "messages published to exchange asya-ml for no queue are dropped by RabbitMQ: the transport has no managementURL"},
		{"queues not created", Settings{Exchange: "asya", ManagementURL: "http://mq:15672", Queues: transport.Queues{AutoCreate: &off}}, flat,
			nil, "messages published to exchange asya-ml for no queue are dropped by RabbitMQ: asya-sync sets up nothing on the broker (queues.autoCreate is off)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			catches, uncaught := tt.settings.Catches(tt.q)
			var names []string
			for _, c := range catches {
				if !c.Unroutable || c.Actor != "" {
					t.Errorf("catch %+v: want an unroutable queue of no actor", c)
				}
				names = append(names, c.Name())
			}
			if strings.Join(names, " ") != strings.Join(tt.want, " ") {
				t.Errorf("catches %v, want %v", names, tt.want)
			}
			if !strings.HasPrefix(uncaught, tt.wantUncaught) || (tt.wantUncaught == "") != (uncaught == "") {
				t.Errorf("uncaught %q, want %q...", uncaught, tt.wantUncaught)
			}
		})
	}
}

// gateway publishes as upstream's gateway does (asya-gateway
// internal/queue/channel_pool.go and rabbitmq_pooled.go at a7cec2a): on a
// channel of its own it declares its exchange (topic, durable, no
// arguments), then publishes persistent JSON keyed by the bare actor name,
// without mandatory.
func gateway(t *testing.T, ctx context.Context, exchange, actor, body string) {
	t.Helper()
	ch := amqpChannel(t)
	defer ch.Close()
	if err := ch.ExchangeDeclare(exchange, "topic", true, false, false, false, nil); err != nil {
		t.Fatalf("the gateway's declare of %s: %v", exchange, err)
	}
	if err := ch.PublishWithContext(ctx, exchange, actor, false, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/json", Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
}

// awaitBody drains queue until a message with body arrives, and returns
// the bodies drained.
func awaitBody(t *testing.T, queue, body string) []string {
	t.Helper()
	ch := amqpChannel(t)
	defer ch.Close()
	var got []string
	testenv.Eventually(t, 5*time.Second, body+" in "+queue, func() bool {
		for {
			msg, ok, err := ch.Get(queue, true)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return false
			}
			got = append(got, string(msg.Body))
			if string(msg.Body) == body {
				return true
			}
		}
	})
	return got
}

// ensureWithCatches ensures q and its catching queues, twice (every
// ensure is idempotent), and removes the namespace's at the end of the
// test.
func ensureWithCatches(t *testing.T, ctx context.Context, r *Broker, q transport.Queue) {
	t.Helper()
	catches, uncaught := r.cfg.Catches(q)
	if uncaught != "" {
		t.Fatal(uncaught)
	}
	if q.Scoped { // the test exchange's goes after every test (TestMain)
		t.Cleanup(func() {
			removeCatch(r.cfg.exchange(q), transport.Queue{Namespace: q.Namespace, Scoped: true, Unroutable: true}.Name())
		})
	}
	for range 2 {
		for _, ensure := range append([]transport.Queue{q}, catches...) {
			if err := r.Ensure(ctx, ensure); err != nil {
				t.Fatalf("Ensure %s: %v", ensure.Name(), err)
			}
		}
	}
}

func TestRabbitMQGatewayReachesFlatActorsAndUnroutableIsCaught(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	for _, gatewayFirst := range []bool{true, false} {
		name := map[bool]string{true: "gateway declares the exchange first", false: "asya-sync declares the exchange first"}[gatewayFirst]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newBroker(t, withManagement)
			ctx := testenv.Context(t)
			ns, actor := testenv.ActorName("ns"), "doubler"
			q := transport.Queue{Actor: actor, Namespace: ns, Scoped: true}
			exchange, catch := testExchange+"-"+ns, transport.Queue{Namespace: ns, Scoped: true, Unroutable: true}
			t.Cleanup(func() { deleteQueues(q.Name()); deleteExchange(exchange) })
			if gatewayFirst {
				gateway(t, ctx, exchange, "nobody-yet", "before")
			}
			ensureWithCatches(t, ctx, r, q)

			gateway(t, ctx, exchange, actor, "for the actor")
			if got := awaitBody(t, q.Name(), "for the actor"); len(got) != 1 {
				t.Errorf("%s got %q, want only the gateway's message", q.Name(), got)
			}
			gateway(t, ctx, exchange, "no-such-actor", "for nobody")
			testenv.Eventually(t, 15*time.Second, catch.Name()+" counted", func() bool {
				counts, err := r.Counts(ctx, catch)
				return err == nil && brokertest.Count(counts.Queued) == "1"
			})
			if got := awaitBody(t, catch.Name(), "for nobody"); len(got) != 1 {
				t.Errorf("%s got %q, want only the message for no actor", catch.Name(), got)
			}
			if n, _ := queueExists(t, q.Name()); n != 0 {
				t.Errorf("%s holds %d messages, want none", q.Name(), n)
			}
		})
	}
}

// The transport's own exchange, where nested actors and a gateway left
// on its default publish, catches into asya.unroutable.
func TestRabbitMQUnroutableOnTheTransportExchange(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	r := newBroker(t, withManagement)
	ctx := testenv.Context(t)
	ensureWithCatches(t, ctx, r, transport.Queue{Actor: ensuredActor(t, ctx, r, "nested")})
	body := "for nobody " + testenv.ActorName("body")
	gateway(t, ctx, testExchange, testenv.ActorName("no-such-actor"), body)
	awaitBody(t, "asya.unroutable", body)
}

// A policy of the user's that outranks asya-sync's on the exchange is
// reported, not overwritten.
func TestRabbitMQUnroutablePolicyOutranked(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	r := newBroker(t, withManagement)
	ctx := testenv.Context(t)
	ns := testenv.ActorName("ns")
	exchange := testExchange + "-" + ns
	theirs := "users-" + ns
	testenv.ManagementSend(t, http.MethodPut, "/api/policies/%2F/"+theirs, policy{Pattern: "^" + exchange + "$",
		Definition: map[string]string{"alternate-exchange": "elsewhere"}, Priority: UnroutablePolicyPriority + 1, ApplyTo: "all"}, nil)
	t.Cleanup(func() { managementDelete("/api/policies/%2F/" + theirs); deleteExchange(exchange) })
	gateway(t, ctx, exchange, "nobody", "dropped")
	catch := transport.Queue{Namespace: ns, Scoped: true, Unroutable: true}
	t.Cleanup(func() { removeCatch(exchange, catch.Name()) })

	te := brokertest.WantReason(t, r.Ensure(ctx, catch), transport.ReasonQueueConflict)
	t.Log(te)
	for _, want := range []string{"follows policy " + theirs, "alternate-exchange: " + exchange + ".unroutable"} {
		if !strings.Contains(te.Message, want) {
			t.Errorf("message %q does not say %q", te.Message, want)
		}
	}
}

// A user without the policymaker tag is told it needs it.
func TestRabbitMQUnroutablePolicyRefused(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	vhost, user := testenv.ActorName("vh"), testenv.ActorName("user")
	testenv.RabbitVHost(t, vhost, user, "secret")
	t.Cleanup(func() {
		managementDelete("/api/vhosts/" + url.PathEscape(vhost))
		managementDelete("/api/users/" + url.PathEscape(user))
	})
	r := newBroker(t, withManagement, func(c *Settings) {
		c.VHost, c.Username, c.PasswordFile = vhost, user, writeFile(t, "secret")
	})
	te := brokertest.WantReason(t, r.Ensure(testenv.Context(t), transport.Queue{Namespace: "ml", Scoped: true, Unroutable: true}), transport.ReasonQueueError)
	t.Log(te)
	if !strings.Contains(te.Message, "policymaker") {
		t.Errorf("message %q does not name the tag the user needs", te.Message)
	}
}

// writeFile writes content to a file of the test and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// removeCatch deletes what ensuring a catch of exchange made: its policy,
// its alternate exchange and the catching queue.
func removeCatch(exchange, queue string) {
	managementDelete("/api/policies/%2F/" + url.PathEscape(alternateExchange(exchange)))
	deleteExchange(alternateExchange(exchange))
	deleteQueues(queue)
}

func deleteExchange(name string) {
	withTestChannel(func(ch *amqp.Channel) { ch.ExchangeDelete(name, false, false) })
}

func deleteQueues(names ...string) {
	withTestChannel(func(ch *amqp.Channel) {
		for _, name := range names {
			ch.QueueDelete(name, false, false, false)
		}
	})
}

// withTestChannel runs f on a channel of its own, for clean-ups: it does
// nothing when the broker cannot be reached.
func withTestChannel(f func(*amqp.Channel)) {
	conn, err := amqp.Dial(testenv.RabbitURL())
	if err != nil {
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		f(ch)
	}
}

// managementDelete deletes what path names, if it can, for clean-ups.
func managementDelete(path string) {
	uri, err := amqp.ParseURI(testenv.RabbitURL())
	if err != nil {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, strings.TrimRight(testenv.RabbitManagementURL(), "/")+path, bytes.NewReader(nil))
	if err != nil {
		return
	}
	req.SetBasicAuth(uri.Username, uri.Password)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}
