package rabbitmq

import (
	"context"
	"errors"
	"regexp"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/transport"
)

// The owner record of a queue (docs/design.md#queues) is an exchange of
// its own, asya-sync.owner.<queue>, whose alternate-exchange argument is
// the claim (transport.Queue.Claim) of the first to declare the queue.
//
// RabbitMQ compares alternate-exchange when an exchange is declared again
// and refuses another value with PRECONDITION_FAILED, which names the
// value recorded: the broker itself turns a second claim away, atomically,
// on any vhost and without the management API. A queue argument of our
// own (x-asya-owner) would not do: RabbitMQ keeps it but compares only
// the arguments it knows, so a second declare with another owner
// succeeds, and an existing queue cannot be given one. The exchange is
// internal, so nothing can publish to it and the alternate exchange is
// never looked up; the queue itself, which the sidecar and KEDA declare
// passively, is declared as before. The record of a queue asya-sync
// adopted carries a mark in the same value (adoptedMark).
const recordPrefix = "asya-sync.owner."

// OwnerRecord is the name of the queue's owner record.
func OwnerRecord(queue string) string { return recordPrefix + queue }

// adoptedMark prefixes the claim in the owner record of an adopted queue:
// one that existed, without a record, when asya-sync first declared it
// (docs/design.md#adopted-queues). No claim holds ':' (Kubernetes names
// cannot), so a marked value is never a claim of its own. The mark is part
// of the compared alternate-exchange value on purpose: a record is written
// once, marked or not, and a declare with the other value is refused and
// names the value recorded, so the broker decides, atomically, which of
// two replicas' first declares wins, and every later declare reads it.
const adoptedMark = "adopted:"

// recordValue is the alternate-exchange value of a record of claim.
func recordValue(claim string, adopted bool) string {
	if adopted {
		return adoptedMark + claim
	}
	return claim
}

// readRecord is the claim a record's value names, and whether it marks
// the queue adopted.
func readRecord(value string) (claim string, adopted bool) {
	claim, adopted = strings.CutPrefix(value, adoptedMark)
	return claim, adopted
}

// claimAs declares the queue's owner record for claim, marked adopted or
// not, and reports whether the record marks the queue adopted: a record of
// claim already written with the other mark is kept as it is, and read
// from the broker's refusal (which closes the channel: nothing more can be
// done on ch then). A record of another claim is a *transport.Held error.
// A queue without a record is claimed by the first claim to declare one:
// the record may come before the queue or long after it (queues created
// before records existed).
func claimAs(ch *amqp.Channel, queue, claim string, adopted bool) (bool, error) {
	err := declareRecord(ch, queue, recordValue(claim, adopted), false)
	switch {
	case isAMQPCode(err, amqp.PreconditionFailed):
		value := recordedClaim(err)
		if recorded, marked := readRecord(value); value != "" && recorded == claim {
			return marked, nil
		}
		recorded, _ := readRecord(value)
		return false, transport.HeldError(queue, recorded)
	case err != nil:
		return false, &amqpStepError{kind: "owner record", name: OwnerRecord(queue), err: err}
	}
	return adopted, nil
}

// declareRecord declares the queue's owner record for claim.
func declareRecord(ch *amqp.Channel, queue, claim string, noWait bool) error {
	return ch.ExchangeDeclare(OwnerRecord(queue), amqp.ExchangeFanout, true, false, true, noWait,
		amqp.Table{"alternate-exchange": claim})
}

// deleteRecord deletes the queue's owner record.
func deleteRecord(ch *amqp.Channel, queue string, noWait bool) error {
	return ch.ExchangeDelete(OwnerRecord(queue), false, noWait)
}

// unclaim deletes the queue's owner record once the queue is gone. The
// queue goes first: while the record stays, no other claim can bind to a
// queue that still holds the owner's messages.
func unclaim(ch *amqp.Channel, queue string) error {
	if err := deleteRecord(ch, queue, false); err != nil && !isAMQPCode(err, amqp.NotFound) {
		return &amqpStepError{kind: "owner record", name: OwnerRecord(queue), err: err}
	}
	return nil
}

// currentValue finds the recorded claim in RabbitMQ's refusal:
// "inequivalent arg 'alternate-exchange' ...: received 'b' but current is
// 'a'" (3.8 and later), "... but current is the value 'a' of type
// 'longstr'" (before).
var currentValue = regexp.MustCompile(`inequivalent arg 'alternate-exchange'.* current is (?:the value )?'([^']*)'`)

// recordedClaim is the claim a refused declare names; empty when the
// refusal names none (a record exchange someone made by hand).
func recordedClaim(err error) string {
	var ae *amqp.Error
	if errors.As(err, &ae) {
		if m := currentValue.FindStringSubmatch(ae.Reason); m != nil {
			return m[1]
		}
	}
	return ""
}

// own declares the queue's owner record for claim on a channel of its own
// (claimAs), and reports whether it marks the queue adopted.
func (r *Broker) own(ctx context.Context, queue, claim string, adopted bool) (marked bool, err error) {
	err = r.withChannel(ctx, func(ch *amqp.Channel) error {
		marked, err = claimAs(ch, queue, claim, adopted)
		return err
	})
	return marked, err
}

// record writes the queue's owner record for claim if it has none, marked
// adopted if the queue exists then, and reports whether the record marks
// the queue adopted. Why two replicas ensuring at once agree:
//
//   - asya-sync writes a queue's record before it creates the queue, and
//     deletes the record only after the queue (unclaim). So a queue seen
//     to exist while its record was seen missing just before was not
//     created by asya-sync: someone else made it, and it is adopted.
//   - The record is written by one declare whose value carries the mark,
//     and RabbitMQ refuses a declare with another value, naming the one
//     recorded (claimAs). Of two first declares, one marked and one not,
//     the broker keeps the first and the other reads it: a replica that
//     found no queue (and writes no mark) and one that then found the
//     queue the first created (and writes the mark) cannot both win, and
//     since the record came before the queue, the marked declare finds it
//     and reads it unmarked.
//   - A record that exists is never rewritten: one written by an earlier
//     release has no mark, and keeps it.
//
// What this cannot tell: a queue someone else creates between this
// replica's passive declare, which finds none, and its record, is taken as
// created by asya-sync. The common case, a record that exists, costs one
// passive declare more than the record alone.
func (r *Broker) record(ctx context.Context, queue, claim string) (adopted bool, err error) {
	recorded, err := r.recorded(ctx, queue)
	if err != nil {
		return false, err
	}
	if recorded {
		return r.own(ctx, queue, claim, false)
	}
	exists, err := r.exists(ctx, queue)
	if err != nil {
		return false, err
	}
	return r.own(ctx, queue, claim, exists)
}

// Adopted implements transport.Adopter: whether the queue's owner record
// marks it adopted, or, with no record, whether the queue exists (then
// asya-sync did not create it). It writes nothing, and a transport that
// does not create its queues records nothing: its queues are never
// adopted (finalize keeps them on their own rule).
func (r *Broker) Adopted(ctx context.Context, q transport.Queue) (bool, error) {
	if q.Unroutable || !r.cfg.Queues.AutoCreateQueues() {
		return false, nil
	}
	recorded, err := r.recorded(ctx, q.Name())
	var adopted bool
	switch {
	case err == nil && recorded:
		adopted, err = r.own(ctx, q.Name(), q.Claim(), false) // writes nothing: the record exists
	case err == nil:
		adopted, err = r.exists(ctx, q.Name())
	}
	if err == nil && recorded {
		r.learn(q, adopted)
	}
	return adopted, r.explain(ctx, err)
}

// KnownAdopted implements transport.Adopter with no broker call: whether
// the queue's record, as the last ensure (or Adopted) that reached the
// broker read or wrote it, marks the queue adopted. A record is written
// once and its mark never changes while it exists, so a sync whose ensure
// the ensure cache answered reads it here; finalize asks Adopted instead.
func (r *Broker) KnownAdopted(q transport.Queue) bool {
	if q.Unroutable || !r.cfg.Queues.AutoCreateQueues() {
		return false
	}
	r.marksMu.Lock()
	defer r.marksMu.Unlock()
	m, ok := r.marks[q.Name()]
	return ok && m.claim == q.Claim() && m.adopted
}

// learn keeps what the queue's record of q's claim says of adoption.
func (r *Broker) learn(q transport.Queue, adopted bool) {
	r.marksMu.Lock()
	defer r.marksMu.Unlock()
	if r.marks == nil {
		r.marks = map[string]knownMark{}
	}
	r.marks[q.Name()] = knownMark{claim: q.Claim(), adopted: adopted}
}

// forgetMark drops what was known of the queue's record: it is being
// deleted.
func (r *Broker) forgetMark(queue string) {
	r.marksMu.Lock()
	defer r.marksMu.Unlock()
	delete(r.marks, queue)
}

// recorded reports whether the queue has an owner record.
func (r *Broker) recorded(ctx context.Context, queue string) (bool, error) {
	return r.passive(ctx, "owner record", OwnerRecord(queue), func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(OwnerRecord(queue), amqp.ExchangeFanout, true, false, true, false, nil)
	})
}

// exists reports whether the queue exists.
func (r *Broker) exists(ctx context.Context, queue string) (bool, error) {
	return r.passive(ctx, "queue", queue, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		return err
	})
}

// passive runs a passive declare, on a channel of its own since a missing
// object closes it, and reports whether the object exists.
func (r *Broker) passive(ctx context.Context, kind, name string, declare func(*amqp.Channel) error) (bool, error) {
	found := true
	err := r.withChannel(ctx, func(ch *amqp.Channel) error {
		err := declare(ch)
		if isAMQPCode(err, amqp.NotFound) {
			found = false
			return nil
		}
		if err != nil {
			return &amqpStepError{kind: kind, name: name, err: err}
		}
		return nil
	})
	return found && err == nil, err
}
