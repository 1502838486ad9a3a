package transport

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// countingTransport counts the calls that reach it; release, when set,
// holds Ensure until it is closed.
type countingTransport struct {
	Transport // the real broker, or nil
	ensures   atomic.Int64
	deletes   atomic.Int64
	release   chan struct{}
	fail      error
}

func (c *countingTransport) Ensure(ctx context.Context, q Queue) error {
	c.ensures.Add(1)
	if c.release != nil {
		<-c.release
	}
	if c.fail != nil {
		return c.fail
	}
	if c.Transport == nil {
		return nil
	}
	return c.Transport.Ensure(ctx, q)
}

func (c *countingTransport) Delete(ctx context.Context, q Queue) error {
	c.deletes.Add(1)
	if c.Transport == nil {
		return nil
	}
	return c.Transport.Delete(ctx, q)
}

func (c *countingTransport) Close() error { return nil }

// Against the real broker: a queue deleted by hand stays gone while the
// cache trusts the last Ensure, and comes back once the TTL has passed.
func TestCachedEnsureSkipsTheBrokerWithinTheTTL(t *testing.T) {
	t.Parallel()
	broker := &countingTransport{Transport: newRabbitMQ(t)}
	clock := newFakeClock()
	cached := NewCached(broker, 5*time.Minute, clock.Now)
	actor := actorName("cache")
	cleanupRabbitQueues(t, actor)
	ctx := testContext(t)
	q := Queue{Actor: actor, Namespace: "ns", ProcessingTimeout: 60}

	steps := []struct {
		name        string
		advance     time.Duration
		queue       Queue
		deleteFirst bool
		wantCalls   int64
		wantQueue   bool
	}{
		{"first ensure", 0, q, false, 1, true},
		{"within the TTL, queue deleted by hand", time.Minute, q, true, 1, false},
		{"still within the TTL", 3*time.Minute + 59*time.Second, q, false, 1, false},
		{"TTL passed", time.Second, q, false, 2, true},
		{"other settings", 0, Queue{Actor: actor, Namespace: "ns", ProcessingTimeout: 90}, false, 3, true},
		{"same settings again", time.Second, Queue{Actor: actor, Namespace: "ns", ProcessingTimeout: 90}, false, 3, true},
	}
	for _, step := range steps {
		clock.Advance(step.advance)
		if step.deleteFirst {
			deleteQueueByHand(t, q.Name())
		}
		if err := cached.Ensure(ctx, step.queue); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := broker.ensures.Load(); got != step.wantCalls {
			t.Errorf("%s: %d broker calls, want %d", step.name, got, step.wantCalls)
		}
		if _, exists := queueExists(t, q.Name()); exists != step.wantQueue {
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
	if _, exists := queueExists(t, q.Name()); !exists || broker.ensures.Load() != 4 {
		t.Errorf("after Delete and Ensure: exists=%v calls=%d, want the queue back after a 4th call", exists, broker.ensures.Load())
	}
}

func TestCachedEnsureSharesConcurrentCalls(t *testing.T) {
	broker := &countingTransport{release: make(chan struct{})}
	cached := NewCached(broker, time.Minute, newFakeClock().Now)
	q := Queue{Actor: "same"}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := cached.Ensure(context.Background(), q); err != nil {
				t.Error(err)
			}
		})
	}
	for broker.ensures.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the others pile up behind the first
	close(broker.release)
	wg.Wait()
	if got := broker.ensures.Load(); got != 1 {
		t.Errorf("%d broker calls for 50 concurrent Ensures of one queue, want 1", got)
	}
}

func TestCachedEnsureFailuresAreNotCached(t *testing.T) {
	broker := &countingTransport{fail: &Error{Reason: ReasonBrokerUnavailable, Message: "down"}}
	cached := NewCached(broker, time.Minute, newFakeClock().Now)
	for range 3 {
		wantReason(t, cached.Ensure(context.Background(), Queue{Actor: "x"}), ReasonBrokerUnavailable)
	}
	if got := broker.ensures.Load(); got != 3 {
		t.Errorf("%d broker calls, want every failed Ensure retried", got)
	}
}

func TestCachedEnsureGivesUpWithTheCallersContext(t *testing.T) {
	broker := &countingTransport{release: make(chan struct{})}
	defer close(broker.release)
	cached := NewCached(broker, time.Minute, newFakeClock().Now)
	go cached.Ensure(context.Background(), Queue{Actor: "slow"}) //nolint:errcheck // the leader, held
	for broker.ensures.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := cached.Ensure(ctx, Queue{Actor: "slow"})
	if te := wantReason(t, err, ReasonBrokerUnavailable); !errors.Is(te, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the deadline", err)
	}
}

// An Ensure that was under way while the queue was deleted must not be
// trusted afterwards.
func TestCachedEnsureRacingDeleteIsNotRemembered(t *testing.T) {
	broker := &countingTransport{release: make(chan struct{})}
	cached := NewCached(broker, time.Minute, newFakeClock().Now)
	q := Queue{Actor: "raced"}
	done := make(chan error)
	go func() { done <- cached.Ensure(context.Background(), q) }()
	for broker.ensures.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := cached.Delete(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	close(broker.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := cached.Ensure(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if got := broker.ensures.Load(); got != 2 {
		t.Errorf("%d broker calls, want the Ensure after Delete to reach the broker", got)
	}
}

func TestCachedEntriesExpire(t *testing.T) {
	broker := &countingTransport{}
	clock := newFakeClock()
	cached := NewCached(broker, time.Minute, clock.Now)
	ctx := context.Background()
	for _, actor := range []string{"a", "b", "c", "d"} {
		if err := cached.Ensure(ctx, Queue{Actor: actor}); err != nil {
			t.Fatal(err)
		}
	}
	if n := cached.cachedEntries(); n != 4 {
		t.Fatalf("%d entries, want 4", n)
	}
	clock.Advance(2 * time.Minute)
	if err := cached.Ensure(ctx, Queue{Actor: "e"}); err != nil {
		t.Fatal(err)
	}
	if n := cached.cachedEntries(); n != 1 {
		t.Errorf("%d entries after the TTL, want only the new one", n)
	}
}

func TestCachedWithoutTTLAlwaysCallsTheBroker(t *testing.T) {
	broker := &countingTransport{}
	cached := NewCached(broker, 0, newFakeClock().Now)
	for range 3 {
		if err := cached.Ensure(context.Background(), Queue{Actor: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := broker.ensures.Load(); got != 3 {
		t.Errorf("%d broker calls, want 3", got)
	}
}

// Against the real broker: counts are reused for CountsTTL, so a busy
// queue does not change the actor's status on every sync.
func TestCachedCountsAreReusedForCountsTTL(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cached := NewCached(newRabbitMQ(t), 5*time.Minute, func() time.Time { return clock })
	actor := actorName("counts-ttl")
	cleanupRabbitQueues(t, actor)
	q := Queue{Actor: actor, Namespace: "ml", ProcessingTimeout: 30}
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
	ch := amqpChannel(t)
	if err := ch.PublishWithContext(ctx, "", q.Name(), false, false, amqp.Publishing{Body: []byte("m")}); err != nil {
		t.Fatal(err)
	}
	if got := queued(); got != 0 {
		t.Errorf("queued = %d within CountsTTL, want the cached 0", got)
	}
	clock = clock.Add(CountsTTL)
	deadline := time.Now().Add(10 * time.Second)
	got := queued()
	for got != 1 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		clock = clock.Add(CountsTTL)
		got = queued()
	}
	if got != 1 {
		t.Errorf("queued = %d after CountsTTL, want 1", got)
	}
}

// The same queue name claimed from two namespaces is two cache entries:
// neither evicts the other, and deleting the queue forgets both.
func TestCachedKeysOnNamespace(t *testing.T) {
	broker := &countingTransport{}
	cached := NewCached(broker, time.Minute, newFakeClock().Now)
	ctx := context.Background()
	a, b := Queue{Actor: "x", Namespace: "team-a"}, Queue{Actor: "x", Namespace: "team-b"}
	for _, q := range []Queue{a, b, a, b} {
		if err := cached.Ensure(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if got := broker.ensures.Load(); got != 2 {
		t.Fatalf("%d broker calls for two namespaces ensured twice each, want 2", got)
	}
	if err := cached.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n := cached.cachedEntries(); n != 0 {
		t.Errorf("%d entries after the queue was deleted, want none", n)
	}
}

// cachedEntries is the number of remembered queues.
func (c *Cached) cachedEntries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ensured)
}
