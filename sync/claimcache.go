package sync

import (
	gosync "sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/asya-sh/asya-sync/api/hook"
)

// ClaimantsCache keeps, for queueCacheTTL, the claimants read for an actor
// that owned its queue, per actor uid and generation, so that a steady
// owner's syncs read them once per TTL as its queue is ensured, not on
// every call: while the reads are lists (the service's index of the
// actors not ready), each costs the API server a scan of the actors in
// its scope (docs/performance.md). Its answer cannot go stale in a way that
// costs a message: an actor created later never takes the queue from an
// older owner, a newer twin or namesake reads for itself on every call
// while it stands by, and a finalize always reads. Like the queue cache,
// it is per replica and only saves work.
type ClaimantsCache struct {
	ttl       time.Duration
	mu        gosync.Mutex
	entries   map[claimantsKey]claimantsEntry
	nextSweep time.Time
}

type claimantsKey struct {
	uid        types.UID
	generation int64
}

type claimantsEntry struct {
	actors hook.ActorGroup
	until  time.Time
}

// NewClaimantsCache keeps claimants for ttl.
func NewClaimantsCache(ttl time.Duration) *ClaimantsCache {
	return &ClaimantsCache{ttl: ttl, entries: map[claimantsKey]claimantsEntry{}}
}

// get is the claimants kept for the key, if they are still fresh at now.
// A nil cache keeps nothing.
func (c *ClaimantsCache) get(key claimantsKey, now time.Time) (hook.ActorGroup, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if ok && now.After(e.until) {
		delete(c.entries, key)
		ok = false
	}
	return e.actors, ok
}

// keep stores the claimants of an owner, and forgets those of an actor
// that is not (it reads again on its next call).
func (c *ClaimantsCache) keep(key claimantsKey, actors hook.ActorGroup, owner bool, now time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !owner {
		delete(c.entries, key)
		return
	}
	c.sweep(now)
	c.entries[key] = claimantsEntry{actors: actors, until: now.Add(c.ttl)}
}

// sweep drops expired entries, at most once per TTL, as the queue cache
// does (brokers.Cached): a store costs no pass over every actor's entry.
func (c *ClaimantsCache) sweep(now time.Time) {
	if now.Before(c.nextSweep) {
		return
	}
	for k, e := range c.entries {
		if now.After(e.until) {
			delete(c.entries, k)
		}
	}
	c.nextSweep = now.Add(c.ttl)
}
