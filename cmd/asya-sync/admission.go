package main

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/asya-sh/asya-sync/transport"
)

// A sync is almost all CPU: decoding the request, building the children and
// the status, encoding the answer. When more syncs run than there are CPUs
// they share the CPUs in time slices, and each takes as long as all of them
// together; a sync descheduled by a garbage collection or a preemption waits
// behind all the others, which made the slowest syncs several times slower
// than the median. An admission limits the syncs computing at once
// (--max-concurrent-syncs, GOMAXPROCS by default); the others wait their
// turn in arrival order, so each finishes in about its own time once it
// starts. Reading the request comes before the turn, and a sync waiting for
// a broker (a cache miss: the queue's first ensure, counts every 30 s)
// gives its turn to the next sync and queues again when the broker answers.
//
// A turn given back goes to the next sync through a pipe, not straight to
// it. The Go scheduler polls the network only when a processor has nothing
// else to run, or every 10 ms from its monitor thread. Handed straight on,
// a turn makes the next sync runnable at once, so while syncs queue no
// processor is ever idle, and requests that have arrived wait unread for up
// to 10 ms, then start in a batch, in no particular order. Through the pipe
// the network poller wakes the next sync, together with the requests that
// have arrived meanwhile (docs/performance.md#a-turn-through-the-network-poller).

// brokerGrace is how long a sync keeps its turn while a broker call has not
// returned: a cached answer takes microseconds, a broker's a network round
// trip at least.
const brokerGrace = time.Millisecond

// admission is a first-come, first-served limit on the syncs computing at
// once. A nil admission admits everything at once.
type admission struct {
	// slots holds a token per turn taken. Goroutines blocked sending on a
	// channel are woken in the order they blocked.
	slots chan struct{}
	// given carries a byte per turn given back; passOn takes the turn's
	// token out of slots. Nil if no pipe could be made: turns then go
	// straight on.
	given *os.File
}

// newAdmission admits n syncs at once; n <= 0 means no limit.
func newAdmission(n int) *admission {
	if n <= 0 {
		return nil
	}
	a := &admission{slots: make(chan struct{}, n)}
	if r, w, err := os.Pipe(); err == nil {
		a.given = w
		go a.passOn(r)
	}
	return a
}

// aTurn is what give writes for a turn given back.
var aTurn = []byte{0}

// passOn frees a turn for each byte read from r. Neither end of the pipe
// is ever closed: the admission lives as long as the process.
func (a *admission) passOn(r *os.File) {
	buf := make([]byte, cap(a.slots))
	for {
		n, err := r.Read(buf)
		for range n {
			<-a.slots
		}
		if err != nil {
			return
		}
	}
}

// limit runs fn in its turn. A call whose caller gives up while it waits is
// not run.
func (a *admission) limit(fn hookFunc) hookFunc {
	if a == nil {
		return fn
	}
	return func(ctx context.Context, body []byte) (outcome, error) {
		t := &turn{a: a}
		if err := t.take(ctx); err != nil {
			return outcome{result: "failed"}, err
		}
		defer t.give()
		return fn(context.WithValue(ctx, turnKey{}, t), body)
	}
}

// turn is one call's place in the admission.
type turn struct {
	a    *admission
	mu   sync.Mutex
	held bool
}

type turnKey struct{}

func (t *turn) take(ctx context.Context) error {
	select {
	case t.a.slots <- struct{}{}:
		t.mu.Lock()
		t.held = true
		t.mu.Unlock()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *turn) give() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.held {
		return
	}
	t.held = false
	if t.a.given != nil {
		if _, err := t.a.given.Write(aTurn); err == nil {
			return
		}
	}
	<-t.a.slots
}

// awaitBroker is called as a broker call starts; the function it returns,
// as it ends. If the call takes longer than brokerGrace, the sync gives its
// turn to the next one meanwhile and waits for a turn again afterwards (or
// runs on without one if its caller has given up).
func awaitBroker(ctx context.Context) (done func()) {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil {
		return func() {}
	}
	given := make(chan struct{})
	timer := time.AfterFunc(brokerGrace, func() {
		t.give()
		close(given)
	})
	return func() {
		if timer.Stop() {
			return
		}
		<-given
		_ = t.take(ctx)
	}
}

// yieldingBrokers hands out the transports of l wrapped so that a sync
// waiting for a broker does not hold its turn.
type yieldingBrokers struct{ transport.Lookup }

func (l yieldingBrokers) Get(name string) (transport.Broker, bool) {
	t, ok := l.Lookup.Get(name)
	if !ok {
		return t, false
	}
	return yieldingBroker{t}, true
}

type yieldingBroker struct{ transport.Broker }

func (b yieldingBroker) Ensure(ctx context.Context, q transport.Queue) error {
	defer awaitBroker(ctx)()
	return b.Broker.Ensure(ctx, q)
}

func (b yieldingBroker) Delete(ctx context.Context, q transport.Queue) error {
	defer awaitBroker(ctx)()
	return b.Broker.Delete(ctx, q)
}

func (b yieldingBroker) Counts(ctx context.Context, q transport.Queue) (transport.Counts, error) {
	defer awaitBroker(ctx)()
	return b.Broker.Counts(ctx, q)
}
