package rabbitmq

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/brokertest"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

func TestRabbitMQEnsureDeclaresDurableQueueBoundToActorName(t *testing.T) {
	t.Parallel()
	r := newBroker(t)
	testenv.NeedRabbitManagement(t)
	actor := testenv.ActorName("bind")
	cleanupRabbitQueues(t, actor)
	ctx := testenv.Context(t)

	if err := r.Ensure(ctx, transport.Queue{Actor: actor, Namespace: "ns"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Ensure(ctx, transport.Queue{Actor: actor, Namespace: "ns"}); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}

	var info struct {
		Durable    bool           `json:"durable"`
		AutoDelete bool           `json:"auto_delete"`
		Arguments  map[string]any `json:"arguments"`
	}
	testenv.Management(t, http.MethodGet, "/api/queues/%2F/"+transport.QueueName(actor), &info)
	if !info.Durable || info.AutoDelete || len(info.Arguments) != 0 {
		t.Errorf("queue durable=%v auto_delete=%v arguments=%v, want durable, not auto-delete, no arguments",
			info.Durable, info.AutoDelete, info.Arguments)
	}
	if _, dlq := queueExists(t, transport.Queue{Actor: actor}.DLQName()); dlq {
		t.Errorf("%s exists with the DLQ off", transport.Queue{Actor: actor}.DLQName())
	}

	// The sidecar publishes to the exchange with the bare actor name.
	ch := amqpChannel(t)
	body := "hello " + actor
	if err := ch.PublishWithContext(ctx, testExchange, actor, true, false, amqp.Publishing{Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	var got amqp.Delivery
	testenv.Eventually(t, 5*time.Second, "message routed to "+transport.QueueName(actor), func() bool {
		msg, ok, err := ch.Get(transport.QueueName(actor), true)
		if err != nil {
			t.Fatal(err)
		}
		got = msg
		return ok
	})
	if string(got.Body) != body {
		t.Errorf("got %q, want %q", got.Body, body)
	}
}

func TestRabbitMQDeadLettersRejectedMessages(t *testing.T) {
	t.Parallel()
	r := newBroker(t, withDLQ)
	ctx := testenv.Context(t)
	actor := ensuredActor(t, ctx, r, "dlq")

	ch := amqpChannel(t)
	if err := ch.PublishWithContext(ctx, testExchange, actor, true, false, amqp.Publishing{Body: []byte("poison")}); err != nil {
		t.Fatal(err)
	}
	var msg amqp.Delivery
	testenv.Eventually(t, 5*time.Second, "message in "+transport.QueueName(actor), func() bool {
		var ok bool
		var err error
		msg, ok, err = ch.Get(transport.QueueName(actor), false)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if err := msg.Reject(false); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "message dead-lettered to "+transport.Queue{Actor: actor}.DLQName(), func() bool {
		dead, ok, err := ch.Get(transport.Queue{Actor: actor}.DLQName(), true)
		if err != nil {
			t.Fatal(err)
		}
		return ok && string(dead.Body) == "poison"
	})
}

// A queue with other arguments is reported, never deleted: it may hold
// messages that nobody else has.
func TestRabbitMQConflictingQueueIsReportedAndKept(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		dlq      bool
		durable  bool
		args     amqp.Table
		wantText []string
	}{
		{"DLQ turned on", true, true, nil, []string{"x-dead-letter-exchange", "3 ready messages", "migrate it by hand"}},
		{"DLQ turned off", false, true, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "elsewhere"}, []string{"x-dead-letter-exchange", "3 ready messages"}},
		{"foreign argument", false, true, amqp.Table{"x-max-length": int32(1000)}, []string{"x-max-length", "3 ready messages"}},
		{"not durable", false, false, nil, []string{"durable", "3 ready messages"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var opts []func(*Settings)
			if tt.dlq {
				opts = append(opts, withDLQ)
			}
			r := newBroker(t, opts...)
			actor := testenv.ActorName("conflict")
			cleanupRabbitQueues(t, actor)
			ctx := testenv.Context(t)
			ch := amqpChannel(t)
			if _, err := ch.QueueDeclare(transport.QueueName(actor), tt.durable, false, false, false, tt.args); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				msg := amqp.Publishing{Body: []byte(fmt.Sprint(i))}
				if err := ch.PublishWithContext(ctx, "", transport.QueueName(actor), true, false, msg); err != nil {
					t.Fatal(err)
				}
			}
			testenv.Eventually(t, 5*time.Second, "3 messages queued", func() bool { n, _ := queueExists(t, transport.QueueName(actor)); return n == 3 })

			te := brokertest.WantReason(t, r.Ensure(ctx, transport.Queue{Actor: actor}), transport.ReasonQueueConflict)
			t.Log(te)
			for _, want := range tt.wantText {
				if !strings.Contains(te.Error(), want) {
					t.Errorf("message %q does not mention %q", te.Error(), want)
				}
			}
			if n, exists := queueExists(t, transport.QueueName(actor)); !exists || n != 3 {
				t.Errorf("after Ensure: exists=%v messages=%d, want the queue kept with its 3 messages", exists, n)
			}
		})
	}
}

func TestRabbitMQAutoCreateOff(t *testing.T) {
	t.Parallel()
	r := newBroker(t, withoutAutoCreate)
	ctx := testenv.Context(t)
	actor := testenv.ActorName("nocreate")
	cleanupRabbitQueues(t, actor)

	te := brokertest.WantReason(t, r.Ensure(ctx, transport.Queue{Actor: actor}), transport.ReasonQueueNotFound)
	t.Log(te)
	if !strings.Contains(te.Message, "autoCreate is off") {
		t.Errorf("message %q does not say why", te.Message)
	}
	if _, exists := queueExists(t, transport.QueueName(actor)); exists {
		t.Fatalf("%s was created with autoCreate off", transport.QueueName(actor))
	}

	if _, err := amqpChannel(t).QueueDeclare(transport.QueueName(actor), true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Ensure(ctx, transport.Queue{Actor: actor}); err != nil {
		t.Errorf("Ensure of an existing queue with autoCreate off: %v", err)
	}
}

func TestRabbitMQUnreachableBroker(t *testing.T) {
	t.Parallel()
	r := New("down", testSettings(t, func(c *Settings) {
		c.Host, c.Port = "127.0.0.1", testenv.ClosedPort(t)
	}), nil)
	defer r.Close()
	q := transport.Queue{Actor: testenv.ActorName("down")}
	ops := map[string]func(context.Context) error{
		"Ensure": func(ctx context.Context) error { return r.Ensure(ctx, q) },
		"Delete": func(ctx context.Context) error { return r.Delete(ctx, q) },
		"Counts": func(ctx context.Context) error { _, err := r.Counts(ctx, q); return err },
	}
	for name, op := range ops {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		err := op(ctx)
		cancel()
		te := brokertest.WantReason(t, err, transport.ReasonBrokerUnavailable)
		t.Log(te)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s took %v to fail", name, took)
		}
		if !strings.Contains(te.Error(), "connection refused") {
			t.Errorf("%s: %q does not carry the dial error", name, te.Error())
		}
	}
}

func TestRabbitMQCounts(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	tests := []struct {
		name           string
		management     bool
		wantProcessing string
	}{
		{"management API", true, "1"},
		{"passive declare", false, "-1"}, // unknown without the management API
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := []func(*Settings){}
			if tt.management {
				opts = append(opts, withManagement)
			}
			r := newBroker(t, opts...)
			ctx := testenv.Context(t)
			actor := ensuredActor(t, ctx, r, "counts")
			ch := amqpChannel(t)
			for range 3 {
				if err := ch.PublishWithContext(ctx, testExchange, actor, true, false, amqp.Publishing{Body: []byte("m")}); err != nil {
					t.Fatal(err)
				}
			}
			testenv.Eventually(t, 5*time.Second, "3 messages queued", func() bool { n, _ := queueExists(t, transport.QueueName(actor)); return n == 3 })
			if _, ok, err := ch.Get(transport.QueueName(actor), false); !ok || err != nil { // one in flight, unacknowledged
				t.Fatalf("get: ok=%v err=%v", ok, err)
			}
			// The management API publishes statistics every few seconds.
			var got string
			testenv.Eventually(t, 15*time.Second, "counts 2 queued, "+tt.wantProcessing+" processing", func() bool {
				counts, err := r.Counts(ctx, transport.Queue{Actor: actor})
				if err != nil {
					t.Fatal(err)
				}
				got = brokertest.Count(counts.Queued) + "/" + brokertest.Count(counts.Processing)
				return got == "2/"+tt.wantProcessing
			})
		})
	}
}

func TestRabbitMQCountsOfMissingQueue(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	for _, r := range []*Broker{newBroker(t), newBroker(t, withManagement)} {
		_, err := r.Counts(testenv.Context(t), transport.Queue{Actor: testenv.ActorName("nocounts")})
		brokertest.WantReason(t, err, transport.ReasonQueueNotFound)
	}
}

func TestRabbitMQDeleteIsIdempotent(t *testing.T) {
	t.Parallel()
	r := newBroker(t, withDLQ)
	ctx := testenv.Context(t)
	actor := ensuredActor(t, ctx, r, "delete")
	if err := amqpChannel(t).PublishWithContext(ctx, testExchange, actor, true, false, amqp.Publishing{Body: []byte("left behind")}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := r.Delete(ctx, transport.Queue{Actor: actor}); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	for _, queue := range []string{transport.QueueName(actor), transport.Queue{Actor: actor}.DLQName()} {
		if _, exists := queueExists(t, queue); exists {
			t.Errorf("%s still exists", queue)
		}
	}
}

// A connection closed by the broker is reopened without anyone noticing
// more than one failed call at most.
func TestRabbitMQReconnectsAfterTheBrokerClosesTheConnection(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	r := newBroker(t)
	ctx := testenv.Context(t)
	actor := ensuredActor(t, ctx, r, "reconnect")
	dropped, err := r.conn.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Force-close from the broker side, as an operator or a restart would.
	testenv.CloseBrokerConnections(t, r.ConnectionName(), 5*time.Second)
	testenv.Eventually(t, 5*time.Second, "the client sees the close", dropped.IsClosed)
	// The background reconnect opens a new connection without any call.
	testenv.Eventually(t, 5*time.Second, "reconnected", func() bool {
		conn, _ := r.conn.current()
		return conn != nil && conn != dropped
	})
	if err := r.Ensure(ctx, transport.Queue{Actor: actor}); err != nil {
		t.Errorf("Ensure after reconnecting: %v", err)
	}
}

// 200 actors ensured at once share the transport's single connection.
func TestRabbitMQParallelEnsuresShareOneConnection(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	const actors = 200
	r := newBroker(t, withDLQ)
	cached := brokers.NewCached(r, time.Minute, testenv.NewFakeClock().Now)
	prefix := testenv.ActorName("fleet")
	names := make([]string, actors)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	cleanupRabbitQueues(t, names...)
	ctx := testenv.Context(t)

	var wg sync.WaitGroup
	errs := make(chan error, actors)
	start := time.Now()
	for _, name := range names {
		wg.Go(func() {
			errs <- cached.Ensure(ctx, transport.Queue{Actor: name, Namespace: "fleet", ProcessingTimeout: 60})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d parallel Ensures took %v", actors, time.Since(start))

	var queues []struct {
		Name string `json:"name"`
	}
	testenv.Management(t, http.MethodGet, "/api/queues/%2F?columns=name", &queues)
	created, dlqs := 0, 0
	for _, q := range queues {
		switch {
		case !strings.HasPrefix(q.Name, transport.QueueName(prefix)):
		case strings.HasSuffix(q.Name, "-dlq"):
			dlqs++
		default:
			created++
		}
	}
	if created != actors || dlqs != actors {
		t.Errorf("%d queues and %d DLQs created, want %d of each", created, dlqs, actors)
	}
	// The broker lists a new connection after a moment.
	conns := testenv.BrokerConnections(t, r.ConnectionName())
	for deadline := time.Now().Add(5 * time.Second); conns == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		conns = testenv.BrokerConnections(t, r.ConnectionName())
	}
	t.Logf("AMQP connections used by the transport: %d", conns)
	if conns != 1 {
		t.Errorf("%d AMQP connections for one transport, want 1", conns)
	}
}

// Operations one after another share one channel; a channel a broker
// error closed is never handed to the next operation.
func TestRabbitMQReusesChannelsButNotFailedOnes(t *testing.T) {
	t.Parallel()
	r := newBroker(t)
	ctx := testenv.Context(t)
	actor := ensuredActor(t, ctx, r, "channels")
	q := transport.Queue{Actor: actor}
	idle := func() []*amqp.Channel {
		var out []*amqp.Channel
		for len(r.idle) > 0 {
			out = append(out, <-r.idle)
		}
		for _, ch := range out {
			r.idle <- ch
		}
		return out
	}

	first := idle()
	if len(first) != 1 {
		t.Fatalf("after one operation %d idle channels, want 1", len(first))
	}
	if _, err := r.Counts(ctx, q); err != nil {
		t.Fatal(err)
	}
	if after := idle(); len(after) != 1 || after[0] != first[0] {
		t.Fatalf("the second operation did not reuse the first one's channel: idle %v, before %v", after, first)
	}

	_, err := r.Counts(ctx, transport.Queue{Actor: actor + "-missing"})
	brokertest.WantReason(t, err, transport.ReasonQueueNotFound)
	if len(idle()) != 0 || !first[0].IsClosed() {
		t.Fatalf("the channel the broker closed is kept: idle %d, closed %v", len(idle()), first[0].IsClosed())
	}
	if err := r.Delete(ctx, q); err != nil {
		t.Fatalf("the operation after a broker error: %v", err)
	}
}
