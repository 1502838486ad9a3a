// Package scripted is a broker for golden tests: it answers as a case's
// world.json says and records the queue operations it was asked for. The
// real brokers are exercised by the integration tests of transport, sync
// and finalize; golden cases pin down what the hooks do with the answers.
package scripted

import (
	"context"
	"sync"
	"time"

	"github.com/asya-sh/asya-sync/transport"
)

// Failure is a broker error as world.json spells it.
type Failure struct {
	Reason            string `json:"reason"`
	Message           string `json:"message"`
	RetryAfterSeconds int    `json:"retryAfterSeconds"`
}

func (f *Failure) err() error {
	if f == nil {
		return nil
	}
	return &transport.Error{Reason: f.Reason, Message: f.Message, RetryAfter: time.Duration(f.RetryAfterSeconds) * time.Second}
}

// Answers are what the broker says to each operation.
type Answers struct {
	EnsureError *Failure          `json:"ensureError,omitempty"`
	DeleteError *Failure          `json:"deleteError,omitempty"`
	Counts      *transport.Counts `json:"counts,omitempty"`
}

// Broker answers every transport name with the same scripted broker.
type Broker struct {
	answers Answers
	mu      sync.Mutex
	calls   []string
}

// New is a broker giving the answers, with no calls recorded yet.
func New(a Answers) *Broker { return &Broker{answers: a, calls: []string{}} }

// Calls are the operations asked for, in order: "ensure asya-x for ns/x".
func (b *Broker) Calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string{}, b.calls...)
}

func (b *Broker) record(op string, q transport.Queue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, op+" "+q.Name()+" for "+q.Namespace+"/"+q.Actor)
}

// Get implements transport.Lookup.
func (b *Broker) Get(string) (transport.Broker, bool) { return b, true }

func (b *Broker) Ensure(_ context.Context, q transport.Queue) error {
	b.record("ensure", q)
	return b.answers.EnsureError.err()
}

func (b *Broker) Delete(_ context.Context, q transport.Queue) error {
	b.record("delete", q)
	return b.answers.DeleteError.err()
}

func (b *Broker) Counts(_ context.Context, q transport.Queue) (transport.Counts, error) {
	b.record("counts", q)
	if b.answers.Counts == nil {
		return transport.Counts{}, nil
	}
	return *b.answers.Counts, nil
}

func (b *Broker) Close() error { return nil }
