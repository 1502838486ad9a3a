package brokers_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
)

// ensureCounter counts the Ensures that reach the broker it wraps.
type ensureCounter struct {
	transport.Broker
	ensures atomic.Int64
}

func (c *ensureCounter) Ensure(ctx context.Context, q transport.Queue) error {
	c.ensures.Add(1)
	return c.Broker.Ensure(ctx, q)
}

// rabbitSettings are the test broker's, the password in a file as in
// production, without an exchange.
func rabbitSettings(t *testing.T) *rabbitmq.Settings {
	t.Helper()
	login := testenv.NewRabbitLogin(t)
	s := &rabbitmq.Settings{Host: login.Host, Port: login.Port, VHost: login.VHost,
		Username: login.Username, PasswordFile: login.PasswordFile}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	return s
}

// newRabbitBroker opens a broker on the test broker, closed after the test.
func newRabbitBroker(t *testing.T) transport.Broker {
	t.Helper()
	testenv.NeedRabbitMQ(t)
	broker := rabbitmq.New(testenv.ActorName("conn"), *rabbitSettings(t), nil)
	t.Cleanup(func() { broker.Close() })
	return broker
}

// cleanupRabbitQueues deletes the actors' queues after the test, on the
// connection it returns.
func cleanupRabbitQueues(t *testing.T, actors ...string) *amqp.Connection {
	conn := testenv.Rabbit(t)
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		defer ch.Close()
		for _, actor := range actors {
			q := transport.Queue{Actor: actor}
			for _, name := range []string{q.Name(), q.DLQName()} {
				ch.QueueDelete(name, false, false, false)
				ch.ExchangeDelete(testenv.OwnerRecord(name), false, false)
			}
		}
	})
	return conn
}

// Against the real broker: a queue deleted by hand stays gone while the
// cache trusts the last Ensure, and comes back once the TTL has passed.
func TestCachedEnsureSkipsTheBrokerWithinTheTTL(t *testing.T) {
	t.Parallel()
	broker := &ensureCounter{Broker: newRabbitBroker(t)}
	clock := testenv.NewFakeClock()
	cached := brokers.NewCached(broker, 5*time.Minute, clock.Now)
	actor := testenv.ActorName("cache")
	conn := cleanupRabbitQueues(t, actor)
	ctx := testenv.Context(t)
	q := transport.Queue{Actor: actor, Namespace: "ns", ProcessingTimeout: 60}

	steps := []struct {
		name        string
		advance     time.Duration
		queue       transport.Queue
		deleteFirst bool
		wantCalls   int64
		wantQueue   bool
	}{
		{"first ensure", 0, q, false, 1, true},
		{"within the TTL, queue deleted by hand", time.Minute, q, true, 1, false},
		{"still within the TTL", 3*time.Minute + 59*time.Second, q, false, 1, false},
		{"TTL passed", time.Second, q, false, 2, true},
		{"other settings", 0, transport.Queue{Actor: actor, Namespace: "ns", ProcessingTimeout: 90}, false, 3, true},
		{"same settings again", time.Second, transport.Queue{Actor: actor, Namespace: "ns", ProcessingTimeout: 90}, false, 3, true},
	}
	for _, step := range steps {
		clock.Advance(step.advance)
		if step.deleteFirst {
			testenv.DeleteQueue(t, conn, q.Name())
		}
		if err := cached.Ensure(ctx, step.queue); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := broker.ensures.Load(); got != step.wantCalls {
			t.Errorf("%s: %d broker calls, want %d", step.name, got, step.wantCalls)
		}
		if exists := testenv.QueueExists(t, conn, q.Name()); exists != step.wantQueue {
			t.Errorf("%s: queue exists = %v, want %v", step.name, exists, step.wantQueue)
		}
	}

	// Delete forgets the queue: the next Ensure recreates it at once.
	if err := cached.Delete(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := cached.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	if exists := testenv.QueueExists(t, conn, q.Name()); !exists || broker.ensures.Load() != 4 {
		t.Errorf("after Delete and Ensure: exists=%v calls=%d, want the queue back after a 4th call", exists, broker.ensures.Load())
	}
}

// Against the real broker: counts are reused for brokers.CountsTTL, so a busy
// queue does not change the actor's status on every sync.
func TestCachedCountsAreReusedForCountsTTL(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cached := brokers.NewCached(newRabbitBroker(t), 5*time.Minute, func() time.Time { return clock })
	actor := testenv.ActorName("counts-ttl")
	conn := cleanupRabbitQueues(t, actor)
	q := transport.Queue{Actor: actor, Namespace: "ml", ProcessingTimeout: 30}
	ctx := context.Background()
	if err := cached.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	queued := func() int64 {
		t.Helper()
		c, err := cached.Counts(ctx, q)
		if err != nil || c.Queued == nil {
			t.Fatalf("counts: %+v, %v", c, err)
		}
		return *c.Queued
	}
	if got := queued(); got != 0 {
		t.Fatalf("queued = %d on a new queue", got)
	}
	testenv.Publish(t, conn, q.Name())
	if got := queued(); got != 0 {
		t.Errorf("queued = %d within brokers.CountsTTL, want the cached 0", got)
	}
	clock = clock.Add(brokers.CountsTTL)
	deadline := time.Now().Add(10 * time.Second)
	got := queued()
	for got != 1 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		clock = clock.Add(brokers.CountsTTL)
		got = queued()
	}
	if got != 1 {
		t.Errorf("queued = %d after brokers.CountsTTL, want 1", got)
	}
}
