package brokers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/asya-sh/asya-sync/transport"
)

// Cached trusts a successful Ensure of a queue with the same settings for
// a TTL, so that a steady-state sync ensures nothing; a queue deleted
// by hand comes back once the TTL has passed. Concurrent Ensures of the
// same queue and settings share one broker call. Counts are kept for
// CountsTTL: every change of a count is a status write, and every status
// write triggers another sync, so fresh counts on every sync would keep a
// busy actor's status changing as fast as Metacontroller can write it.
// Delete always reaches the broker.
type Cached struct {
	inner  transport.Broker
	ttl    time.Duration
	now    func() time.Time
	flight singleflight.Group

	// Lookups, when set, learns of every Ensure whether the cache answered
	// it (hit) or passed it on (miss).
	Lookups func(hit bool)

	mu sync.Mutex
	// ensured is keyed by the queue's name, then by the whole Queue
	// (actor, namespace and settings): a Delete forgets a name without a
	// pass over every queue ensured.
	ensured map[string]map[transport.Queue]time.Time // until when
	counted map[string]countedQueue                  // by queue name
	// generation changes with every Delete, so that an Ensure that raced
	// a Delete is not remembered as if the queue were still there.
	generation uint64
	nextSweep  time.Time
}

type countedQueue struct {
	counts transport.Counts
	until  time.Time
}

// CountsTTL is how long message counts are reused (or the ensure TTL, if
// shorter).
const CountsTTL = 30 * time.Second

// NewCached wraps inner; a TTL of zero or less turns caching off.
func NewCached(inner transport.Broker, ttl time.Duration, now func() time.Time) *Cached {
	if now == nil {
		now = time.Now
	}
	return &Cached{inner: inner, ttl: ttl, now: now, ensured: map[string]map[transport.Queue]time.Time{}, counted: map[string]countedQueue{}}
}

// Ensure calls the broker unless the same queue with the same settings was
// ensured less than the TTL ago. Callers that share a broker call share its
// outcome, including a deadline of the first caller's context.
func (c *Cached) Ensure(ctx context.Context, q transport.Queue) error {
	if c.ttl <= 0 {
		return c.inner.Ensure(ctx, q)
	}
	hit := c.fresh(q)
	if c.Lookups != nil {
		c.Lookups(hit)
	}
	if hit {
		return nil
	}
	result := c.flight.DoChan(flightKey(q), func() (any, error) {
		generation := c.currentGeneration()
		err := c.inner.Ensure(ctx, q)
		if err == nil {
			c.remember(q, generation)
		}
		return nil, err
	})
	select {
	case r := <-result:
		return r.Err
	case <-ctx.Done():
		return &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: "waiting for the broker to ensure queue " + q.Name(), Err: ctx.Err()}
	}
}

// Delete forgets the queue, before and after deleting it, so that no
// Ensure running meanwhile is trusted afterwards.
func (c *Cached) Delete(ctx context.Context, q transport.Queue) error {
	c.forget(q.Name())
	defer c.forget(q.Name())
	return c.inner.Delete(ctx, q)
}

// Counts reads the counts from the broker unless it did less than
// CountsTTL ago. Failures are not kept.
func (c *Cached) Counts(ctx context.Context, q transport.Queue) (transport.Counts, error) {
	if c.ttl <= 0 {
		return c.inner.Counts(ctx, q)
	}
	c.mu.Lock()
	e, ok := c.counted[q.Name()]
	c.mu.Unlock()
	if ok && c.now().Before(e.until) {
		return e.counts, nil
	}
	counts, err := c.inner.Counts(ctx, q)
	if err == nil {
		c.mu.Lock()
		c.counted[q.Name()] = countedQueue{counts: counts, until: c.now().Add(min(c.ttl, CountsTTL))}
		c.mu.Unlock()
	}
	return counts, err
}

// Close closes the wrapped transport.
func (c *Cached) Close() error { return c.inner.Close() }

func (c *Cached) fresh(q transport.Queue) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.ensured[q.Name()][q]
	return ok && c.now().Before(until)
}

func (c *Cached) currentGeneration() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

func (c *Cached) remember(q transport.Queue, generation uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	now := c.now()
	name := q.Name()
	if c.ensured[name] == nil {
		c.ensured[name] = map[transport.Queue]time.Time{}
	}
	c.ensured[name][q] = now.Add(c.ttl)
	c.sweep(now)
}

// sweep drops expired entries, at most once per TTL, so memory stays
// proportional to the queues ensured within the last two TTLs.
func (c *Cached) sweep(now time.Time) {
	if now.Before(c.nextSweep) {
		return
	}
	for name, queues := range c.ensured {
		for q, until := range queues {
			if !now.Before(until) {
				delete(queues, q)
			}
		}
		if len(queues) == 0 {
			delete(c.ensured, name)
		}
	}
	for name, e := range c.counted {
		if !now.Before(e.until) {
			delete(c.counted, name)
		}
	}
	c.nextSweep = now.Add(c.ttl)
}

func (c *Cached) forget(queue string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	delete(c.ensured, queue)
	delete(c.counted, queue)
}

// flightKey tells apart ensures that must not share a broker call: the same
// queue claimed from two namespaces, or with other settings, and queues
// of one actor and namespace that are different queues (a nested actor's
// asya-<name>, a flat one's asya-<namespace>-<actor>, the namespace's
// asya-<namespace>.unroutable).
func flightKey(q transport.Queue) string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%t\x00%t", q.Actor, q.Namespace, q.ProcessingTimeout, q.Scoped, q.Unroutable)
}

// Adopted always asks the broker: it is asked on finalize, whose decision
// must not rest on a stale answer.
func (c *Cached) Adopted(ctx context.Context, q transport.Queue) (bool, error) {
	return transport.AdoptedQueue(ctx, c.inner, q)
}

// KnownAdopted is what the last Ensure that reached the broker learned: a
// sync whose Ensure the cache answered asks the broker nothing more.
func (c *Cached) KnownAdopted(q transport.Queue) bool {
	return transport.KnownAdoptedQueue(c.inner, q)
}
