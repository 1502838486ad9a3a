// Package brokers opens one broker client per configured transport, puts
// each behind the ensure cache and measures it: the plumbing between the
// hooks and the kinds' clients (transport/rabbitmq, transport/sqs,
// transport/pubsub).
package brokers

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/asya-sh/asya-sync/transport"
)

// Options tune Open; the zero value is right for the service.
type Options struct {
	// Now is the clock of the ensure cache; nil means time.Now.
	Now func() time.Time
	// HTTPClient is used for SQS and the RabbitMQ management API; nil
	// means the default client.
	HTTPClient *http.Client
	// Metrics, when set, measures the transports' broker operations and
	// ensure-cache lookups, and reports their brokers' state.
	Metrics *Metrics
}

// Kind is a transport kind that opens its broker client, as every kind
// registered in config/kinds.go does.
type Kind interface {
	transport.Kind
	// Open returns the broker client of the transport called name. It
	// connects lazily.
	Open(name string, opts Options) (transport.Broker, error)
}

// Set holds one Broker per enabled configured transport, each behind the
// ensure cache. A disabled transport gets none: it has no queues to
// manage, not even to delete (docs/design.md#queues).
type Set struct {
	byName map[string]transport.Broker
}

var _ transport.Lookup = Set{}

// Open builds the brokers of the enabled transports, given by name, each
// behind an ensure cache of the given TTL. It connects to no broker: each
// kind connects on first use.
func Open(enabled map[string]Kind, cacheTTL time.Duration, opts Options) (Set, error) {
	set := Set{byName: map[string]transport.Broker{}}
	names := make([]string, 0, len(enabled))
	for name := range enabled {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		broker, err := enabled[name].Open(name, opts)
		if err != nil {
			_ = set.Close()
			return Set{}, fmt.Errorf("transport %s: %w", name, err)
		}
		set.byName[name] = opts.wrap(name, broker, cacheTTL)
	}
	return set, nil
}

// wrap puts the broker behind the ensure cache, measured if asked to.
func (opts Options) wrap(name string, broker transport.Broker, cacheTTL time.Duration) *Cached {
	if opts.Metrics != nil {
		broker = opts.Metrics.instrument(name, broker, opts.Now)
	}
	cached := NewCached(broker, cacheTTL, opts.Now)
	if opts.Metrics != nil {
		cached.Lookups = opts.Metrics.cacheLookups(name)
	}
	return cached
}

// Get returns the broker of the transport configured under name, if it is
// enabled.
func (s Set) Get(name string) (transport.Broker, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Close closes every broker.
func (s Set) Close() error {
	var errs []error
	for _, t := range s.byName {
		errs = append(errs, t.Close())
	}
	return errors.Join(errs...)
}
