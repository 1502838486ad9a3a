package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/transport"
)

// maxOpenChannels bounds the operations one connection runs at a time,
// and maxIdleChannels the channels kept open between them; together well
// below the broker's default channel_max of 2047.
const (
	maxOpenChannels = 256
	maxIdleChannels = 16
)

// Broker manages actor queues on one RabbitMQ transport over one
// long-lived AMQP connection. An operation runs on a channel of its own,
// kept open for the next one unless the operation failed: a broker error
// closes the channel it happened on.
type Broker struct {
	name     string
	cfg      Settings
	conn     *amqpConnection
	channels chan struct{}
	idle     chan *amqp.Channel
	http     *http.Client

	// marks is what the last ensure (or Adopted) that reached the broker
	// read of each queue's owner record: whether it marks the queue
	// adopted, by queue name (KnownAdopted). A Delete forgets the queue.
	marksMu sync.Mutex
	marks   map[string]knownMark
}

// knownMark is a queue's record as last read: its claim, and whether it
// marks the queue adopted.
type knownMark struct {
	claim   string
	adopted bool
}

// New returns the broker of the transport called name; it connects on
// first use.
func New(name string, cfg Settings, httpClient *http.Client) *Broker {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	r := &Broker{name: name, cfg: cfg, channels: make(chan struct{}, maxOpenChannels),
		idle: make(chan *amqp.Channel, maxIdleChannels), http: httpClient}
	r.conn = newAMQPConnection(r.dial)
	return r
}

// ConnectionName is how the broker lists this transport's connection.
func (r *Broker) ConnectionName() string { return "asya-sync/" + r.name }

// Ensure records the queue's claim, then declares the exchange, the
// dead-letter queue, the queue and its binding; with autoCreate or manage
// off it only checks that the queue exists. A queue recorded to another
// claim is not touched, and the binding of q's route into it, which an
// earlier release or the other claim's sync may have made, is removed.
// A queue that catches unroutable messages gets its alternate exchange
// and policy instead (ensureCatch).
func (r *Broker) Ensure(ctx context.Context, q transport.Queue) error {
	if q.Unroutable {
		return r.ensureCatch(ctx, q)
	}
	if !r.cfg.Queues.AutoCreateQueues() {
		_, err := r.readyMessages(ctx, q.Name())
		var te *transport.Error
		if errors.As(err, &te) && te.Reason == transport.ReasonQueueNotFound {
			te.Message = fmt.Sprintf("queue %s does not exist on %s and %s: create it (durable%s)",
				q.Name(), r.address(), r.cfg.Queues.NotCreatedBecause(), describeArgs(r.queueArgs(q)))
		}
		return err
	}
	err := r.declareRecorded(ctx, q)
	if held, ok := transport.HeldBy(err); ok && held.Queue == q.Name() {
		if err := r.withChannel(ctx, func(ch *amqp.Channel) error { return r.unroute(ch, q) }); err != nil {
			return r.explain(ctx, err)
		}
	}
	return r.explain(ctx, err)
}

// declareRecorded records the queue's claim, and its DLQ's, then declares
// them (record).
// What the queue's record says of adoption is kept (KnownAdopted).
func (r *Broker) declareRecorded(ctx context.Context, q transport.Queue) error {
	adopted, err := r.record(ctx, q.Name(), q.Claim())
	if err != nil {
		return err
	}
	r.learn(q, adopted)
	if r.cfg.Queues.DLQ.Enabled {
		// Another claim's queue may bear this name too (an actor named
		// <actor>-dlq): it is recorded like any queue.
		if _, err := r.record(ctx, q.DLQName(), q.Claim()); err != nil {
			return err
		}
	}
	return r.withChannel(ctx, func(ch *amqp.Channel) error { return r.declare(ch, q) })
}

func (r *Broker) declare(ch *amqp.Channel, q transport.Queue) error {
	actor, queue, exchange := q.Actor, q.Name(), r.cfg.exchange(q)
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return &amqpStepError{kind: "exchange", name: exchange, shape: "topic, durable", err: err}
	}
	if r.cfg.Queues.DLQ.Enabled {
		if _, err := ch.QueueDeclare(q.DLQName(), true, false, false, false, nil); err != nil {
			return &amqpStepError{kind: "queue", name: q.DLQName(), err: err}
		}
	}
	args := r.queueArgs(q)
	if _, err := ch.QueueDeclare(queue, true, false, false, false, args); err != nil {
		return &amqpStepError{kind: "queue", name: queue, args: args, err: err}
	}
	// The sidecar publishes with the bare actor name as routing key.
	if err := ch.QueueBind(queue, actor, exchange, false, nil); err != nil {
		return &amqpStepError{kind: "binding", name: queue + " to " + exchange, err: err}
	}
	return nil
}

// unroute removes q's binding from a queue another claim holds. It is
// never the holder's: two claims never share an exchange and routing key
// (a flat claim routes through its namespace's exchange under its actor,
// a nested one through the transport's exchange). RabbitMQ answers
// unbind-ok for a binding or exchange that does not exist; a queue that
// does not exist (deleted by hand, its record kept) has no binding left.
func (r *Broker) unroute(ch *amqp.Channel, q transport.Queue) error {
	exchange := r.cfg.exchange(q)
	if err := ch.QueueUnbind(q.Name(), q.Actor, exchange, nil); err != nil && !isAMQPCode(err, amqp.NotFound) {
		return &amqpStepError{kind: "binding", name: q.Name() + " to " + exchange, err: err}
	}
	return nil
}

// ensureCatch makes q catch what the exchange of its scope routes to no
// queue: the fanout exchange <exchange>.unroutable, q bound to it, and
// the policy that makes it the exchange's alternate exchange. The
// exchange itself is left alone: the sidecars and the gateway declare it
// too, without arguments, and the policy applies to it whoever declares
// it, before or after. q has no arguments, so that no setting of the
// actors' queues (a DLQ) ever conflicts with it.
func (r *Broker) ensureCatch(ctx context.Context, q transport.Queue) error {
	exchange := r.cfg.exchange(q)
	alternate := alternateExchange(exchange)
	err := r.withChannel(ctx, func(ch *amqp.Channel) error {
		if err := ch.ExchangeDeclare(alternate, amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
			return &amqpStepError{kind: "exchange", name: alternate, shape: "fanout, durable", err: err}
		}
		if _, err := ch.QueueDeclare(q.Name(), true, false, false, false, nil); err != nil {
			return &amqpStepError{kind: "queue", name: q.Name(), err: err}
		}
		if err := ch.QueueBind(q.Name(), "", alternate, false, nil); err != nil {
			return &amqpStepError{kind: "binding", name: q.Name() + " to " + alternate, err: err}
		}
		return nil
	})
	if err != nil {
		return r.explain(ctx, err)
	}
	return r.setUnroutablePolicy(ctx, exchange)
}

// queueArgs are the arguments the actor's queue is declared with: a
// rejected message goes through the default exchange to the DLQ.
func (r *Broker) queueArgs(q transport.Queue) amqp.Table {
	if !r.cfg.Queues.DLQ.Enabled {
		return nil
	}
	return amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q.DLQName()}
}

// Delete deletes the queue and its DLQ, messages and all, each with its
// owner record, unless the record is another claim's: that queue is left
// as it is (for the queue, the error is then a *transport.Held); a record
// of the claim's marked adopted is the claim's too: whether an adopted
// queue is deleted is finalize's decision, made before. A
// transport that does not create its queues records none, so it deletes
// (asked to by the actor's deletion policy) without asking.
//
// With the DLQ off, the DLQ is deleted only if it exists, left from when
// the DLQ was on: the usual answer, none, costs one passive declare, where
// checking its record first would make a record only to delete it, two of
// the broker's costliest changes (docs/performance.md#owner-records).
//
// The usual delete (the claim's own queue, no DLQ left) is sent at once
// (deleteAtOnce); anything else is done one step at a time.
func (r *Broker) Delete(ctx context.Context, q transport.Queue) error {
	r.forgetMark(q.Name())
	defer r.forgetMark(q.Name())
	if r.deleteAtOnce(ctx, q) {
		return nil
	}
	return transport.DeleteClaimed(q, func(name string) error {
		if name == q.DLQName() && !r.cfg.Queues.DLQ.Enabled {
			if _, err := r.readyMessages(ctx, name); err != nil {
				if transport.AsError(err).Reason == transport.ReasonQueueNotFound {
					return nil
				}
				return err
			}
		}
		return r.deleteClaimed(ctx, name, q.Claim())
	})
}

// deleteAtOnce sends the whole usual delete in one round trip: every
// method but the last without waiting for its answer. A channel runs its
// methods in order, and after a refused one the broker drops the rest and
// closes the channel (AMQP 0-9-1), so the last answer is that of all of
// them: a record of another claim's stops the delete before its queue.
// It reports whether that settled the delete; a queue another claim
// holds, a DLQ left from when it was on, or any error is not, and is left
// to the delete one step at a time, which explains it. Every step can be
// done twice.
func (r *Broker) deleteAtOnce(ctx context.Context, q transport.Queue) bool {
	steps := r.deleteSteps(q)
	err := r.withChannel(ctx, func(ch *amqp.Channel) error {
		for i, step := range steps {
			if err := step(ch, i < len(steps)-1); err != nil {
				return err
			}
		}
		return nil
	})
	return err == nil
}

// deleteStep is one method of a delete; noWait sends it without waiting
// for its answer.
type deleteStep func(ch *amqp.Channel, noWait bool) error

// errDLQLeft is a DLQ found with the DLQ off: left from when it was on.
var errDLQLeft = errors.New("a DLQ left from when it was on")

// deleteSteps are the methods of the usual delete: for the queue, and its
// DLQ when the DLQ is on, the record checked, the queue deleted, the
// record deleted; with the DLQ off, a passive declare of the DLQ last,
// whose not-found ends it (and closes the channel).
func (r *Broker) deleteSteps(q transport.Queue) []deleteStep {
	names := []string{q.Name()}
	if r.cfg.Queues.DLQ.Enabled {
		names = append(names, q.DLQName())
	}
	records := r.cfg.Queues.AutoCreateQueues()
	var steps []deleteStep
	for _, name := range names {
		if records {
			steps = append(steps, func(ch *amqp.Channel, noWait bool) error { return declareRecord(ch, name, q.Claim(), noWait) })
		}
		steps = append(steps, func(ch *amqp.Channel, noWait bool) error {
			_, err := ch.QueueDelete(name, false, false, noWait)
			return err
		})
		if records {
			steps = append(steps, func(ch *amqp.Channel, noWait bool) error { return deleteRecord(ch, name, noWait) })
		}
	}
	if !r.cfg.Queues.DLQ.Enabled {
		dlq := q.DLQName()
		steps = append(steps, func(ch *amqp.Channel, _ bool) error {
			_, err := ch.QueueDeclarePassive(dlq, true, false, false, false, nil)
			var ae *amqp.Error
			switch {
			case err == nil:
				return errDLQLeft
			case errors.As(err, &ae) && ae.Code == amqp.NotFound && strings.Contains(ae.Reason, "'"+dlq+"'"):
				return nil
			}
			return err
		})
	}
	return steps
}

// deleteClaimed deletes one queue of the claim's, then its record. RabbitMQ
// answers delete-ok for a queue that does not exist; a broker that
// answers not-found instead closes the channel, so the record goes on a
// new one.
func (r *Broker) deleteClaimed(ctx context.Context, queue, claimed string) error {
	records := r.cfg.Queues.AutoCreateQueues()
	if records {
		// A record of the claim's, marked adopted or not (a queue adopted
		// is deleted only when the actor asks: finalize decides).
		if _, err := r.own(ctx, queue, claimed, false); err != nil {
			return r.explain(ctx, err)
		}
	}
	err := r.withChannel(ctx, func(ch *amqp.Channel) error {
		if _, err := ch.QueueDelete(queue, false, false, false); err != nil && !isAMQPCode(err, amqp.NotFound) {
			return &amqpStepError{kind: "queue", name: queue, err: err}
		}
		return nil
	})
	if err == nil && records {
		err = r.withChannel(ctx, func(ch *amqp.Channel) error { return unclaim(ch, queue) })
	}
	return r.explain(ctx, err)
}

// Counts reads ready and unacknowledged messages from the management API
// when it is configured, else only the ready ones from the broker.
func (r *Broker) Counts(ctx context.Context, q transport.Queue) (transport.Counts, error) {
	var counts transport.Counts
	if r.cfg.ManagementURL != "" {
		var err error
		if counts, err = r.managementCounts(ctx, q.Name()); err != nil {
			return transport.Counts{}, err
		}
	}
	if counts.Queued == nil { // no management API, or no statistics yet
		ready, err := r.readyMessages(ctx, q.Name())
		if err != nil {
			return transport.Counts{}, err
		}
		counts.Queued = &ready
	}
	return counts, nil
}

// readyMessages checks that the queue exists and counts its ready messages.
func (r *Broker) readyMessages(ctx context.Context, queue string) (int64, error) {
	var ready int64
	err := r.withChannel(ctx, func(ch *amqp.Channel) error {
		info, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			return &amqpStepError{kind: "queue", name: queue, err: err}
		}
		ready = int64(info.Messages)
		return nil
	})
	return ready, r.explain(ctx, err)
}

// Close closes the connection.
func (r *Broker) Close() error { return r.conn.Close() }

// Connected implements transport.ConnectionReporter with the state of
// the AMQP connection.
func (r *Broker) Connected() (up, known bool) { return r.conn.state() }

// withChannel runs op on a channel of its own, and gives up waiting when ctx
// ends: amqp091 calls take no context. An abandoned op finishes on its own,
// at the latest when heartbeats find the connection dead.
func (r *Broker) withChannel(ctx context.Context, op func(*amqp.Channel) error) error {
	conn, err := r.conn.get(ctx)
	if err != nil {
		return r.unavailable(err)
	}
	select {
	case r.channels <- struct{}{}:
	case <-ctx.Done():
		return r.unavailable(ctx.Err())
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-r.channels }()
		done <- r.onChannel(conn, op)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return r.unavailable(fmt.Errorf("no answer in time: %w", ctx.Err()))
	}
}

func (r *Broker) onChannel(conn *amqp.Connection, op func(*amqp.Channel) error) error {
	ch, err := r.channel(conn)
	if err != nil {
		return err
	}
	err = op(ch)
	r.release(ch, err)
	return err
}

// channel returns an idle channel that is still open, or a new one. The
// channels of a dropped connection are closed with it.
func (r *Broker) channel(conn *amqp.Connection) (*amqp.Channel, error) {
	for {
		select {
		case ch := <-r.idle:
			if !ch.IsClosed() {
				return ch, nil
			}
		default:
			return conn.Channel()
		}
	}
}

// release keeps a channel for the next operation if its own went well.
func (r *Broker) release(ch *amqp.Channel, opErr error) {
	if opErr == nil && !ch.IsClosed() {
		select {
		case r.idle <- ch:
			return
		default:
		}
	}
	ch.Close() //nolint:errcheck // already closed after a broker error
}

func (r *Broker) dial(ctx context.Context) (*amqp.Connection, error) {
	password, err := r.password()
	if err != nil {
		return nil, err
	}
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(r.ConnectionName())
	uri := amqp.URI{Scheme: "amqp", Host: r.cfg.Host, Port: r.cfg.Port}
	// Credentials and vhost go in Config, so no escaping rules of URLs apply.
	return dialAMQP(ctx, uri.String(), amqp.Config{
		SASL:       []amqp.Authentication{&amqp.PlainAuth{Username: r.cfg.Username, Password: password}},
		Vhost:      r.cfg.VHost,
		Heartbeat:  10 * time.Second,
		Properties: props,
	})
}

// password is the service's own: read at each use, so a rotated file is
// picked up on the next connection.
func (r *Broker) password() (string, error) {
	if r.cfg.PasswordFile == "" {
		return "guest", nil
	}
	data, err := os.ReadFile(r.cfg.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("reading passwordFile: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

func (r *Broker) address() string {
	return fmt.Sprintf("%s:%d (vhost %q)", r.cfg.Host, r.cfg.Port, r.cfg.VHost)
}

func (r *Broker) unavailable(err error) *transport.Error {
	message := "RabbitMQ at " + r.address()
	if isAMQPCode(err, amqp.AccessRefused) {
		// Only the login answers ACCESS_REFUSED outside a queue step.
		message += ": " + loginRefused(r.cfg.Username, r.cfg.Host)
	}
	return &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: message, Err: err}
}

// amqpStepError says what a broker error was about.
type amqpStepError struct {
	kind  string // exchange, queue or binding
	name  string
	shape string     // how an exchange is declared
	args  amqp.Table // a queue's wanted arguments
	err   error
}

func (e *amqpStepError) Error() string { return e.kind + " " + e.name + ": " + e.err.Error() }
func (e *amqpStepError) Unwrap() error { return e.err }

func isAMQPCode(err error, code int) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == code
}

// explain turns a broker error into a transport Error that says what to do.
func (r *Broker) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var te *transport.Error
	if errors.As(err, &te) {
		return te
	}
	var step *amqpStepError
	var ae *amqp.Error
	if !errors.As(err, &step) || !errors.As(err, &ae) {
		return r.unavailable(err)
	}
	switch ae.Code {
	case amqp.PreconditionFailed:
		return r.conflict(ctx, step, ae)
	case amqp.NotFound:
		return &transport.Error{Reason: transport.ReasonQueueNotFound, Message: fmt.Sprintf("%s %s does not exist on %s", step.kind, step.name, r.address())}
	case amqp.AccessRefused, amqp.ResourceLocked, amqp.NotAllowed, amqp.NotImplemented:
		return &transport.Error{Reason: transport.ReasonQueueError, Message: fmt.Sprintf("RabbitMQ at %s refused %s %s", r.address(), step.kind, step.name), Err: ae}
	}
	return r.unavailable(err)
}

// conflict describes an exchange or queue that exists with other settings.
// The queue is never deleted to fix this: it may hold messages.
func (r *Broker) conflict(ctx context.Context, step *amqpStepError, ae *amqp.Error) *transport.Error {
	if step.kind != "queue" {
		return &transport.Error{Reason: transport.ReasonQueueConflict, Message: fmt.Sprintf(
			"%s %s exists on %s with other settings than asya-sync declares (%s): %s; change it or the transport configuration by hand",
			step.kind, step.name, r.address(), step.shape, ae.Reason)}
	}
	held := "it may hold messages"
	if ready, err := r.readyMessages(ctx, step.name); err == nil {
		held = fmt.Sprintf("it holds %d ready messages", ready)
	}
	return &transport.Error{Reason: transport.ReasonQueueConflict, Message: fmt.Sprintf(
		"queue %s exists on %s with other arguments than asya-sync declares (durable%s): %s; %s, so it is left as it is: migrate it by hand (move or drain the messages, delete the queue) and the next sync recreates it",
		step.name, r.address(), describeArgs(step.args), ae.Reason, held)}
}

// describeArgs lists queue arguments in a stable order, for messages.
func describeArgs(args amqp.Table) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, ", %s=%q", k, fmt.Sprint(args[k]))
	}
	return b.String()
}
