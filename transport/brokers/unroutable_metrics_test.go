package brokers

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// countsBroker answers Counts with the messages of each queue by name.
type countsBroker struct {
	transport.Broker
	messages map[string]int64
}

func (b countsBroker) Counts(_ context.Context, q transport.Queue) (transport.Counts, error) {
	n := b.messages[q.Name()]
	return transport.Counts{Queued: &n}, nil
}

func (countsBroker) Close() error { return nil }

// asya_sync_unroutable_messages reports the catching queues counted
// within the window, and no actor's queue.
func TestMetricsOfUnroutableMessages(t *testing.T) {
	reg := prometheus.NewRegistry()
	clock := testenv.NewFakeClock()
	broker := countsBroker{messages: map[string]int64{"asya-ml.unroutable": 3, "asya.unroutable": 1, "asya-ml-doubler": 7}}
	cached := Options{Now: clock.Now, Metrics: NewMetrics(reg)}.wrap("mq", broker, time.Minute)
	ctx := context.Background()
	for _, q := range []transport.Queue{{Namespace: "ml", Scoped: true, Unroutable: true}, {Unroutable: true}, {Actor: "doubler", Namespace: "ml", Scoped: true}} {
		if _, err := cached.Counts(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]float64{
		`asya_sync_unroutable_messages{queue="asya-ml.unroutable",transport="mq"}`: 3,
		`asya_sync_unroutable_messages{queue="asya.unroutable",transport="mq"}`:    1,
	}
	got := testenv.Metrics(t, reg)["asya_sync_unroutable_messages"]
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for series, v := range want {
		if got[series] != v {
			t.Errorf("%s = %v, want %v", series, got[series], v)
		}
	}

	clock.Advance(UnroutableWindow + time.Second)
	if got := testenv.Metrics(t, reg)["asya_sync_unroutable_messages"]; len(got) != 0 {
		t.Errorf("counts read more than %v ago still reported: %v", UnroutableWindow, got)
	}
}
