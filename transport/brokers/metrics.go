package brokers

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asya-sh/asya-sync/transport"
)

// Metrics are the broker-side Prometheus metrics of the transports Open
// builds: every queue operation that reaches a broker, every ensure-cache
// lookup, and whether each broker can be reached.
type Metrics struct {
	operations *prometheus.HistogramVec
	lookups    *prometheus.CounterVec
	up         *prometheus.Desc
	unroutable *prometheus.Desc

	mu         sync.Mutex
	transports []*instrumented
}

// Operation outcomes besides the Reason* values of a failure.
const OutcomeOK = "ok"

// NewMetrics registers the transport metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		operations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "asya_sync_transport_operation_duration_seconds",
			Help:    "Queue operations that reached a broker, by transport, operation (ensure, delete, counts) and outcome (ok or the failure reason).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"transport", "operation", "outcome"}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "asya_sync_queue_cache_lookups_total",
			Help: "Queue ensures answered from the ensure cache (hit) or passed to the broker (miss), by transport.",
		}, []string{"transport", "result"}),
		up: prometheus.NewDesc("asya_sync_broker_up",
			"1 when the transport's broker is reachable, 0 when not; absent until the broker was first used. "+
				"RabbitMQ: its AMQP connection is open. SQS: its last call got an answer from SQS.",
			[]string{"transport"}, nil),
		unroutable: prometheus.NewDesc("asya_sync_unroutable_messages",
			"Messages held by a queue that catches what an exchange routed to no queue (asya-<namespace>.unroutable, asya.unroutable), "+
				"as this replica last counted them within the last 10 minutes.",
			[]string{"transport", "queue"}, nil),
	}
	reg.MustRegister(m.operations, m.lookups, m)
	return m
}

// UnroutableWindow is how long a replica reports the count of a catching
// queue after it last read it: ten resync periods, as asya_sync_actors
// counts actors, so that a queue whose namespace's syncs Metacontroller
// spreads over the replicas stays reported, and one no actor syncs for
// any more (a namespace gone) is forgotten.
const UnroutableWindow = 10 * time.Minute

// Describe implements prometheus.Collector for asya_sync_broker_up and
// asya_sync_unroutable_messages.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.up; ch <- m.unroutable }

// Collect reports the state of every open transport and the counts of its
// catching queues.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	transports := append([]*instrumented(nil), m.transports...)
	m.mu.Unlock()
	for _, t := range transports {
		for queue, n := range t.caughtCounts() {
			ch <- prometheus.MustNewConstMetric(m.unroutable, prometheus.GaugeValue, float64(n), t.name, queue)
		}
		up, known := t.reachable()
		if !known {
			continue
		}
		v := 0.0
		if up {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.up, prometheus.GaugeValue, v, t.name)
	}
}

// instrument wraps the broker of the named transport so that its
// operations are measured and its state reported; now dates the counts
// of its catching queues.
func (m *Metrics) instrument(name string, broker transport.Broker, now func() time.Time) transport.Broker {
	if now == nil {
		now = time.Now
	}
	t := &instrumented{inner: broker, name: name, now: now, caught: map[string]caughtCount{},
		operations: m.operations.MustCurryWith(prometheus.Labels{"transport": name})}
	m.mu.Lock()
	m.transports = append(m.transports, t)
	m.mu.Unlock()
	return t
}

// cacheLookups counts the ensure-cache lookups of the named transport.
func (m *Metrics) cacheLookups(name string) func(hit bool) {
	hits, misses := m.lookups.WithLabelValues(name, "hit"), m.lookups.WithLabelValues(name, "miss")
	return func(hit bool) {
		if hit {
			hits.Inc()
		} else {
			misses.Inc()
		}
	}
}

// ConnectionReporter is a broker with a connection of its own, whose
// state says whether the broker is reachable.
type ConnectionReporter interface {
	// Connected reports whether the connection is open; known is false
	// before the first attempt and after Close.
	Connected() (up, known bool)
}

// instrumented measures each operation of the transport it wraps.
type instrumented struct {
	inner      transport.Broker
	name       string
	operations prometheus.ObserverVec

	mu       sync.Mutex
	answered bool // the last operation got an answer from the broker
	used     bool
	closed   bool
	// caught are the last counts of the catching queues, by name.
	now    func() time.Time
	caught map[string]caughtCount
}

type caughtCount struct {
	messages int64
	at       time.Time
}

func (t *instrumented) Ensure(ctx context.Context, q transport.Queue) error {
	return t.observe("ensure", func() error { return t.inner.Ensure(ctx, q) })
}

func (t *instrumented) Delete(ctx context.Context, q transport.Queue) error {
	return t.observe("delete", func() error { return t.inner.Delete(ctx, q) })
}

func (t *instrumented) Counts(ctx context.Context, q transport.Queue) (transport.Counts, error) {
	var counts transport.Counts
	err := t.observe("counts", func() error {
		var err error
		counts, err = t.inner.Counts(ctx, q)
		return err
	})
	if err == nil && q.Unroutable && counts.Queued != nil {
		t.mu.Lock()
		t.caught[q.Name()] = caughtCount{messages: *counts.Queued, at: t.now()}
		t.mu.Unlock()
	}
	return counts, err
}

// caughtCounts are the counts of the catching queues read within
// UnroutableWindow; older ones are forgotten.
func (t *instrumented) caughtCounts() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	cutoff := t.now().Add(-UnroutableWindow)
	out := map[string]int64{}
	for queue, c := range t.caught {
		if c.at.Before(cutoff) {
			delete(t.caught, queue)
			continue
		}
		out[queue] = c.messages
	}
	return out
}

func (t *instrumented) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return t.inner.Close()
}

func (t *instrumented) observe(operation string, op func() error) error {
	start := time.Now()
	err := op()
	outcome := OutcomeOK
	if err != nil {
		outcome = transport.AsError(err).Reason
	}
	t.operations.WithLabelValues(operation, outcome).Observe(time.Since(start).Seconds())
	t.mu.Lock()
	t.used, t.answered = true, outcome != transport.ReasonBrokerUnavailable
	t.mu.Unlock()
	return err
}

// reachable is the connection's state where the transport has one, else
// whether its last operation got an answer.
func (t *instrumented) reachable() (up, known bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false, false
	}
	if c, ok := t.inner.(ConnectionReporter); ok {
		return c.Connected()
	}
	return t.answered, t.used
}

func (t *instrumented) Adopted(ctx context.Context, q transport.Queue) (bool, error) {
	if _, ok := t.inner.(transport.Adopter); !ok {
		return false, nil // no broker call to measure
	}
	var adopted bool
	err := t.observe("adopted", func() error {
		var err error
		adopted, err = transport.AdoptedQueue(ctx, t.inner, q)
		return err
	})
	return adopted, err
}

// KnownAdopted makes no broker call: there is nothing to measure.
func (t *instrumented) KnownAdopted(q transport.Queue) bool {
	return transport.KnownAdoptedQueue(t.inner, q)
}
