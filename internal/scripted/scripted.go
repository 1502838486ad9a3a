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
	EnsureError *Failure `json:"ensureError,omitempty"`
	// EnsureErrorOf fails the ensures of the queues it names, and only
	// those.
	EnsureErrorOf map[string]*Failure `json:"ensureErrorOf,omitempty"`
	DeleteError   *Failure            `json:"deleteError,omitempty"`
	Counts        *transport.Counts   `json:"counts,omitempty"`
	// Owners are the broker's owner records, queue name to claim: an
	// Ensure or Delete of a queue recorded to another claim answers
	// transport.Held.
	Owners map[string]string `json:"owners,omitempty"`
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

func (b *Broker) record(op string, q transport.Queue, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	call := op + " " + q.Name() + " for " + q.Namespace + "/" + q.Actor
	if held, ok := transport.HeldBy(err); ok {
		call += ": refused, " + held.Queue + " is " + held.Holder + "'s"
	}
	b.calls = append(b.calls, call)
}

// held is the refusal of one of the queues named, recorded to another
// claim than q's.
func (b *Broker) held(q transport.Queue, names ...string) error {
	for _, name := range names {
		if holder, ok := b.answers.Owners[name]; ok && holder != q.Claim() {
			return transport.HeldError(name, holder)
		}
	}
	return nil
}

// Get implements transport.Lookup.
func (b *Broker) Get(string) (transport.Broker, bool) { return b, true }

func (b *Broker) Ensure(_ context.Context, q transport.Queue) error {
	err := b.answers.EnsureError.err()
	if f, ok := b.answers.EnsureErrorOf[q.Name()]; ok {
		err = f.err()
	}
	if err == nil {
		err = b.held(q, q.Name(), q.DLQName())
	}
	b.record("ensure", q, err)
	return err
}

func (b *Broker) Delete(_ context.Context, q transport.Queue) error {
	err := b.answers.DeleteError.err()
	if err == nil {
		err = b.held(q, q.Name()) // a held DLQ is left without a word, as the brokers do
	}
	b.record("delete", q, err)
	return err
}

func (b *Broker) Counts(_ context.Context, q transport.Queue) (transport.Counts, error) {
	b.record("counts", q, nil)
	if b.answers.Counts == nil {
		return transport.Counts{}, nil
	}
	return *b.answers.Counts, nil
}

func (b *Broker) Close() error { return nil }
