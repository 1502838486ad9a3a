// Package transport is the contract between asya-sync and its brokers:
// what a queue is, what a kind of transport says about its pods and KEDA,
// and what a broker client must do. It is plain data and interfaces, which
// the builders read. The broker clients live below it, one package per
// kind (rabbitmq, sqs, pubsub), opened, cached and measured by brokers: together
// the only place asya-sync does IO besides HTTP.
package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Queue says which queue to act on, and with what settings.
type Queue struct {
	// Actor is the actor's name on the queues, which the sidecar routes by:
	// metadata.name of a nested actor, spec.actor of a flat one.
	Actor string
	// Namespace is the actor's namespace (used for SQS tags).
	Namespace string
	// ProcessingTimeout is spec.timeout.processing in seconds; SQS derives
	// its visibility timeout from it.
	ProcessingTimeout int32
	// Scoped is a queue of the flat generation, asya-<namespace>-<actor>:
	// its sidecar names queues by namespace and actor, and on RabbitMQ
	// publishes to an exchange of the namespace's own (its routing key
	// carries no namespace).
	Scoped bool
	// Unroutable is the queue that catches what is published for no queue
	// to the exchange of its scope: a flat namespace's (Scoped), or the
	// transport's own, where nested actors and a gateway left on its
	// defaults publish. It has no Actor. See Catcher.
	Unroutable bool
}

// UnroutableSuffix ends the name of every queue that catches unroutable
// messages. Queue names hold '.', which no namespace and no flat actor's
// name can: the suffix keeps them apart from every actor's queue (a
// nested actor's name may hold '.', so such names are refused).
const UnroutableSuffix = ".unroutable"

// Name is the queue's name on the broker: asya-<namespace>.unroutable and
// asya.unroutable for the queues that catch unroutable messages.
func (q Queue) Name() string {
	switch {
	case q.Unroutable && q.Scoped:
		return "asya-" + q.Namespace + UnroutableSuffix
	case q.Unroutable:
		return "asya" + UnroutableSuffix
	case q.Scoped:
		return FlatQueueName(q.Namespace, q.Actor)
	}
	return QueueName(q.Actor)
}

// QueueName is a nested actor's queue: the 0.3 sidecar's convention, so
// their names are global per transport.
func QueueName(actor string) string { return "asya-" + actor }

// FlatQueueName is a flat actor's queue: the current sidecar names queues
// by namespace and actor.
func FlatQueueName(namespace, actor string) string { return "asya-" + namespace + "-" + actor }

// DLQName is the name of the queue's dead-letter queue on the broker.
func (q Queue) DLQName() string { return q.Name() + "-dlq" }

// Claim is whom the queue is for, as the sidecars route to it: a flat
// queue's namespace and actor ("team-b/doubler"), a nested queue's bare
// actor name, which its namesakes in every namespace share ("echo"). Two
// queues of one name with different claims are a collision
// (docs/design.md#queues): the broker records the claim of the first
// (Broker.Ensure), and the other never touches the queue.
func (q Queue) Claim() string { return claimOf(q.Scoped, q.Namespace, q.Actor) }

// Actor is an actor as its queues see it (an *v1alpha1.AsyncActor): its
// metadata, and what its generation says of its queue.
type Actor interface {
	metav1.Object
	// QueueActor is the name the sidecars route by, and whether queues
	// are scoped by namespace (Queue.Scoped).
	QueueActor() (name string, scoped bool)
	ProcessingTimeout() int32
	TransportName() string
}

// QueueOf is the queue of an actor, with the settings that shape it.
func QueueOf(a Actor) Queue {
	name, scoped := a.QueueActor()
	return Queue{Actor: name, Namespace: a.GetNamespace(), ProcessingTimeout: a.ProcessingTimeout(), Scoped: scoped}
}

// EndQueues are the queues of a flat namespace's actors that end routes
// (v1alpha1.Ends.QueuesOf): they must exist before any message reaches
// them, whether or not their actors run yet. They are shared by every
// actor of the namespace, so each ensures them with the same settings, the
// default processing timeout: with each actor's own, actors of different
// timeouts would keep rewriting an SQS sink's visibility timeout.
// processingTimeout is that default.
func EndQueues(namespace string, actors []string, processingTimeout int32) []Queue {
	out := make([]Queue, 0, len(actors))
	for _, name := range actors {
		out = append(out, Queue{Actor: name, Namespace: namespace, ProcessingTimeout: processingTimeout, Scoped: true})
	}
	return out
}

// UnroutableQueues are the queues that catch what the exchanges of q's
// actor route to no queue, and, when the kind catches none although its
// broker may drop such messages, why not. A kind that drops nothing (SQS:
// a message is sent to a queue by name, and a missing queue is an error to
// the sender) gives neither.
func UnroutableQueues(kind Kind, q Queue) (catches []Queue, uncaught string) {
	if c, ok := kind.(Catcher); ok {
		return c.Catches(q)
	}
	return nil, ""
}

// Counts are message counts of a queue; nil means unknown.
type Counts struct {
	Queued     *int64
	Processing *int64
}

// Broker manages queues on one configured broker. Implementations are
// safe for concurrent use and idempotent.
type Broker interface {
	// Ensure makes the queue exist with the configured settings, or, with
	// autoCreate off, checks that it exists. It never deletes a queue.
	// A queue it creates, and its DLQ, are recorded on the broker to
	// q.Claim(); one found without a record is recorded to it then (and,
	// by a broker that records adoption, marked adopted: Adopter). A
	// queue (or DLQ) recorded to another claim is left as it is, and any
	// route of q's into it removed: the error is then a *Held.
	Ensure(ctx context.Context, q Queue) error
	// Delete removes the queue (and its DLQ), messages and all, with their
	// records. A queue that is already gone is not an error. A queue
	// recorded to another claim is left, and the error is then a *Held.
	Delete(ctx context.Context, q Queue) error
	// Counts reads the queue's message counts.
	Counts(ctx context.Context, q Queue) (Counts, error)
	// Close releases connections.
	Close() error
}

// Adopter is a broker that records which queues it adopted: queues that
// existed, without an owner record, when asya-sync first declared them
// (docs/design.md#adopted-queues). Its Ensure decides it, atomically with
// writing the queue's first owner record; Adopted reads what was decided
// from the broker, KnownAdopted what the last Ensure that reached the
// broker learned. A broker that records no such thing (SQS, Pub/Sub
// today) need not implement it: its queues are all taken as created by
// asya-sync.
type Adopter interface {
	// Adopted reports whether q's queue is recorded as adopted, reading
	// the record fresh (finalize asks it). A queue with no record yet that
	// exists is adopted (asya-sync did not create it); one recorded to
	// another claim is a *Held error.
	Adopted(ctx context.Context, q Queue) (bool, error)
	// KnownAdopted reports, without a broker call, whether the last Ensure
	// (or Adopted) of q's queue that reached the broker found its record
	// marked adopted; false if none did yet. A sync asks it after its
	// Ensure, which the ensure cache may have answered: the mark of a
	// record never changes while the record exists.
	KnownAdopted(q Queue) bool
}

// AdoptedQueue asks broker whether q's queue was adopted, if the broker
// records it; else the answer is false.
func AdoptedQueue(ctx context.Context, broker Broker, q Queue) (bool, error) {
	if a, ok := broker.(Adopter); ok {
		return a.Adopted(ctx, q)
	}
	return false, nil
}

// KnownAdoptedQueue is what broker last learned of whether q's queue was
// adopted (Adopter.KnownAdopted), with no broker call; false if the
// broker records no adoption.
func KnownAdoptedQueue(broker Broker, q Queue) bool {
	if a, ok := broker.(Adopter); ok {
		return a.KnownAdopted(q)
	}
	return false
}

// Reasons a queue operation failed; they become condition reasons.
const (
	ReasonBrokerUnavailable    = "BrokerUnavailable"
	ReasonQueueNotFound        = "QueueNotFound"
	ReasonQueueDeletedRecently = "QueueDeletedRecently"
	ReasonQueueConflict        = "QueueConflict"
	ReasonQueueError           = "QueueError"
)

// Error is a queue operation failure, with a reason for status and, where
// the broker dictates it, how long to wait before trying again.
type Error struct {
	Reason     string
	Message    string
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Reason, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Reason, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// AsError returns err as an *Error, classifying an unknown error as QueueError.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return &Error{Reason: ReasonQueueError, Message: err.Error()}
}

// DefaultTimeout bounds the broker calls of one hook call: well inside
// Metacontroller's default 10 s webhook timeout, so a slow broker yields a
// status that says so rather than a failed hook.
const DefaultTimeout = 5 * time.Second

// Attempt runs op, one broker operation of a hook call, within
// DefaultTimeout; a failure comes back as an *Error, whose Reason is what
// the actor's status reports.
func Attempt(ctx context.Context, op func(context.Context) error) *Error {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	return AsError(op(ctx))
}

// Lookup finds the broker of a configured transport by name.
type Lookup interface {
	Get(name string) (Broker, bool)
}

// Find returns the broker of the named transport, or a BrokerUnavailable
// error when none is open for it.
func Find(l Lookup, name string) (Broker, *Error) {
	if broker, ok := l.Get(name); ok {
		return broker, nil
	}
	return nil, &Error{Reason: ReasonBrokerUnavailable, Message: fmt.Sprintf("transport %q has no open broker connection", name)}
}
