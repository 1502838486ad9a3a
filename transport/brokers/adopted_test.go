package brokers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// adopterTransport records adoption as a RabbitMQ broker does: its Ensure
// learns the mark, Adopted reads it from the broker. It counts the calls
// that would reach the broker.
type adopterTransport struct {
	countingTransport
	adoptedCalls atomic.Int64
	learned      atomic.Bool
}

func (a *adopterTransport) Ensure(ctx context.Context, q transport.Queue) error {
	err := a.countingTransport.Ensure(ctx, q)
	if err == nil {
		a.learned.Store(true)
	}
	return err
}

func (a *adopterTransport) Adopted(context.Context, transport.Queue) (bool, error) {
	a.adoptedCalls.Add(1)
	return true, nil
}

func (a *adopterTransport) KnownAdopted(transport.Queue) bool { return a.learned.Load() }

func (*adopterTransport) Counts(context.Context, transport.Queue) (transport.Counts, error) {
	return transport.Counts{}, nil
}

// A flat actor's sync ensures its queue, then reads whether it was
// adopted: within the cache TTL, the second sync makes no broker call
// for either. Finalize's Adopted always reaches the broker.
func TestKnownAdoptedMakesNoBrokerCall(t *testing.T) {
	clock := testenv.NewFakeClock()
	inner := &adopterTransport{}
	cached := Options{Now: clock.Now, Metrics: NewMetrics(prometheus.NewRegistry())}.wrap("mq", inner, time.Minute)
	ctx := context.Background()
	q := transport.Queue{Actor: "doubler", Namespace: "ml", Scoped: true}
	sync := func() bool {
		t.Helper()
		if err := cached.Ensure(ctx, q); err != nil {
			t.Fatal(err)
		}
		return transport.KnownAdoptedQueue(cached, q)
	}
	if !sync() {
		t.Fatal("first sync: not known adopted; want what the ensure learned")
	}
	clock.Advance(30 * time.Second)
	if !sync() {
		t.Fatal("second sync: not known adopted")
	}
	if n, m := inner.ensures.Load(), inner.adoptedCalls.Load(); n != 1 || m != 0 {
		t.Fatalf("two syncs within the TTL: %d ensures, %d Adopted calls reached the broker; want 1, 0", n, m)
	}

	if adopted, err := transport.AdoptedQueue(ctx, cached, q); err != nil || !adopted {
		t.Fatalf("Adopted = %v, %v; want true", adopted, err)
	}
	if m := inner.adoptedCalls.Load(); m != 1 {
		t.Fatalf("finalize's Adopted: %d broker calls; want 1 (always fresh)", m)
	}
}
