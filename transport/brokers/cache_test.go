package brokers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/brokertest"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// countingTransport counts the calls that reach it; release, when set,
// holds Ensure until it is closed.
type countingTransport struct {
	transport.Broker // the real broker, or nil
	ensures          atomic.Int64
	deletes          atomic.Int64
	release          chan struct{}
	fail             error
}

func (c *countingTransport) Ensure(ctx context.Context, q transport.Queue) error {
	c.ensures.Add(1)
	if c.release != nil {
		<-c.release
	}
	if c.fail != nil {
		return c.fail
	}
	if c.Broker == nil {
		return nil
	}
	return c.Broker.Ensure(ctx, q)
}

func (c *countingTransport) Delete(ctx context.Context, q transport.Queue) error {
	c.deletes.Add(1)
	if c.Broker == nil {
		return nil
	}
	return c.Broker.Delete(ctx, q)
}

func (c *countingTransport) Close() error { return nil }

func TestCachedEnsureSharesConcurrentCalls(t *testing.T) {
	broker := &countingTransport{release: make(chan struct{})}
	cached := NewCached(broker, time.Minute, testenv.NewFakeClock().Now)
	q := transport.Queue{Actor: "same"}
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
	broker := &countingTransport{fail: &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: "down"}}
	cached := NewCached(broker, time.Minute, testenv.NewFakeClock().Now)
	for range 3 {
		brokertest.WantReason(t, cached.Ensure(context.Background(), transport.Queue{Actor: "x"}), transport.ReasonBrokerUnavailable)
	}
	if got := broker.ensures.Load(); got != 3 {
		t.Errorf("%d broker calls, want every failed Ensure retried", got)
	}
}

func TestCachedEnsureGivesUpWithTheCallersContext(t *testing.T) {
	broker := &countingTransport{release: make(chan struct{})}
	defer close(broker.release)
	cached := NewCached(broker, time.Minute, testenv.NewFakeClock().Now)
	go cached.Ensure(context.Background(), transport.Queue{Actor: "slow"}) //nolint:errcheck // the leader, held
	for broker.ensures.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := cached.Ensure(ctx, transport.Queue{Actor: "slow"})
	if te := brokertest.WantReason(t, err, transport.ReasonBrokerUnavailable); !errors.Is(te, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the deadline", err)
	}
}

// An Ensure that was under way while the queue was deleted must not be
// trusted afterwards.
func TestCachedEnsureRacingDeleteIsNotRemembered(t *testing.T) {
	broker := &countingTransport{release: make(chan struct{})}
	cached := NewCached(broker, time.Minute, testenv.NewFakeClock().Now)
	q := transport.Queue{Actor: "raced"}
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
	clock := testenv.NewFakeClock()
	cached := NewCached(broker, time.Minute, clock.Now)
	ctx := context.Background()
	for _, actor := range []string{"a", "b", "c", "d"} {
		if err := cached.Ensure(ctx, transport.Queue{Actor: actor}); err != nil {
			t.Fatal(err)
		}
	}
	if n := cached.cachedEntries(); n != 4 {
		t.Fatalf("%d entries, want 4", n)
	}
	clock.Advance(2 * time.Minute)
	if err := cached.Ensure(ctx, transport.Queue{Actor: "e"}); err != nil {
		t.Fatal(err)
	}
	if n := cached.cachedEntries(); n != 1 {
		t.Errorf("%d entries after the TTL, want only the new one", n)
	}
}

func TestCachedWithoutTTLAlwaysCallsTheBroker(t *testing.T) {
	broker := &countingTransport{}
	cached := NewCached(broker, 0, testenv.NewFakeClock().Now)
	for range 3 {
		if err := cached.Ensure(context.Background(), transport.Queue{Actor: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := broker.ensures.Load(); got != 3 {
		t.Errorf("%d broker calls, want 3", got)
	}
}

// The same queue name claimed from two namespaces is two cache entries:
// neither evicts the other, and deleting the queue forgets both, and
// only them.
func TestCachedKeysOnNamespace(t *testing.T) {
	broker := &countingTransport{}
	cached := NewCached(broker, time.Minute, testenv.NewFakeClock().Now)
	ctx := context.Background()
	a, b := transport.Queue{Actor: "x", Namespace: "team-a"}, transport.Queue{Actor: "x", Namespace: "team-b"}
	other := transport.Queue{Actor: "y", Namespace: "team-a"}
	for _, q := range []transport.Queue{a, b, other, a, b} {
		if err := cached.Ensure(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if got := broker.ensures.Load(); got != 3 {
		t.Fatalf("%d broker calls for three queues, two ensured twice, want 3", got)
	}
	if err := cached.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n := cached.cachedEntries(); n != 1 {
		t.Errorf("%d entries after the queue was deleted, want the other queue's only", n)
	}
	if err := cached.Ensure(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := broker.ensures.Load(); got != 3 {
		t.Errorf("%d broker calls, want the other queue still cached", got)
	}
}

// A Delete costs the same whatever the number of queues ensured: a fleet
// deleted one actor at a time is not a pass over the fleet per actor.
func BenchmarkCachedDelete(b *testing.B) {
	for _, n := range []int{10, 2000} {
		b.Run(fmt.Sprint(n, " queues ensured"), func(b *testing.B) {
			cached := NewCached(&countingTransport{}, time.Minute, testenv.NewFakeClock().Now)
			ctx := context.Background()
			for i := range n {
				if err := cached.Ensure(ctx, transport.Queue{Actor: fmt.Sprint("actor-", i), Namespace: "team"}); err != nil {
					b.Fatal(err)
				}
			}
			q := transport.Queue{Actor: "actor-0", Namespace: "team"}
			for b.Loop() {
				if err := cached.Delete(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A nested and a flat actor of one name in one namespace have two queues
// (asya-x, asya-team-x): concurrent ensures of both each reach the broker.
func TestCachedSharesNoCallBetweenDifferentQueues(t *testing.T) {
	broker := &countingTransport{release: make(chan struct{})}
	cached := NewCached(broker, time.Minute, testenv.NewFakeClock().Now)
	var wg sync.WaitGroup
	for _, q := range []transport.Queue{{Actor: "x", Namespace: "team"}, {Actor: "x", Namespace: "team", Scoped: true}} {
		wg.Go(func() {
			if err := cached.Ensure(context.Background(), q); err != nil {
				t.Error(err)
			}
		})
	}
	deadline := time.Now().Add(2 * time.Second)
	for broker.ensures.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(broker.release)
	wg.Wait()
	if got := broker.ensures.Load(); got != 2 {
		t.Errorf("%d broker calls for concurrent ensures of asya-x and asya-team-x, want 2", got)
	}
}

// cachedEntries is the number of remembered queues.
func (c *Cached) cachedEntries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, queues := range c.ensured {
		n += len(queues)
	}
	return n
}
