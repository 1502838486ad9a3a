package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/asya-sh/asya-sync/config"
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

// Set holds one Transport per enabled configured transport, each behind
// the ensure cache. A disabled transport gets none: it has no queues to
// manage, not even to delete (SPEC §6).
type Set struct {
	byName map[string]Transport
}

var _ Lookup = Set{}

// Open builds the transports. It connects to no broker: RabbitMQ connects
// on first use, SQS needs no connection.
func Open(cfg *config.Config, opts Options) (Set, error) {
	set := Set{byName: map[string]Transport{}}
	for _, name := range cfg.TransportNames() {
		t := cfg.Transports[name]
		if !t.Enabled {
			continue
		}
		broker, err := openOne(t, opts)
		if err != nil {
			_ = set.Close()
			return Set{}, err
		}
		if opts.Metrics != nil {
			broker = opts.Metrics.instrument(name, broker)
		}
		cached := NewCached(broker, cfg.QueueCacheTTL.Duration, opts.Now)
		if opts.Metrics != nil {
			cached.Lookups = opts.Metrics.cacheLookups(name)
		}
		set.byName[name] = cached
	}
	return set, nil
}

func openOne(t config.Transport, opts Options) (Transport, error) {
	switch {
	case t.RabbitMQ != nil:
		return NewRabbitMQ(t.Name, *t.RabbitMQ, opts.HTTPClient), nil
	case t.SQS != nil:
		return NewSQS(context.Background(), t.Name, *t.SQS, opts.HTTPClient)
	}
	return nil, fmt.Errorf("transport %s: type %q has no implementation", t.Name, t.Type)
}

// Get returns the transport configured under name, if it is enabled.
func (s Set) Get(name string) (Transport, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Close closes every transport.
func (s Set) Close() error {
	var errs []error
	for _, t := range s.byName {
		errs = append(errs, t.Close())
	}
	return errors.Join(errs...)
}
