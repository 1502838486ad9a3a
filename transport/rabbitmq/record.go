package rabbitmq

import (
	"errors"
	"regexp"

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
// passively, is declared as before.
//
// The record goes with its queue: it is auto-delete and the queue is
// bound to it, so the queue's delete removes the binding and the record
// in one change. Deleting an exchange by itself costs RabbitMQ about
// twice a queue's delete (docs/performance.md#owner-records). Records
// declared before, standalone (not auto-delete, nothing bound), stay as
// they are: RabbitMQ refuses a declare with another auto_delete and names
// that flag, which is how one is told apart; it is then declared as it
// was and deleted after its queue.
const recordPrefix = "asya-sync.owner."

// OwnerRecord is the name of the queue's owner record.
func OwnerRecord(queue string) string { return recordPrefix + queue }

// standalone is the queues whose records are standalone, as far as the
// broker has said so to one operation.
type standalone map[string]bool

// standaloneRecord is the refusal of a declare that meets a standalone
// record: the operation starts again on a new channel, declaring it as
// standalone (withRecords).
type standaloneRecord struct{ queue string }

func (e *standaloneRecord) Error() string {
	return "owner record " + OwnerRecord(e.queue) + " is standalone"
}

// claim declares the queue's owner record for claim; a record of another
// claim is a *transport.Held error. A queue without a record is claimed
// by the first claim to declare one: the record may come before the queue
// or long after it (queues created before records existed).
func claim(ch *amqp.Channel, queue, claim string, kind standalone) error {
	err := ch.ExchangeDeclare(OwnerRecord(queue), amqp.ExchangeFanout, true, !kind[queue], true, false,
		amqp.Table{"alternate-exchange": claim})
	switch {
	case isAMQPCode(err, amqp.PreconditionFailed) && !kind[queue] && refusedArg(err) == "auto_delete":
		return &standaloneRecord{queue}
	case isAMQPCode(err, amqp.PreconditionFailed):
		return transport.HeldError(queue, recordedClaim(err))
	case err != nil:
		return &amqpStepError{kind: "owner record", name: OwnerRecord(queue), err: err}
	}
	return nil
}

// bindRecord binds the queue to its record, unless the record is
// standalone, so that the record goes with the queue. The binding routes
// nothing: nothing can publish to the record.
func bindRecord(ch *amqp.Channel, queue string, kind standalone) error {
	if kind[queue] {
		return nil
	}
	if err := ch.QueueBind(queue, "", OwnerRecord(queue), false, nil); err != nil {
		return &amqpStepError{kind: "binding", name: queue + " to " + OwnerRecord(queue), err: err}
	}
	return nil
}

// unclaim deletes the queue's owner record once the queue is gone: a
// standalone one, or one its queue never was bound to. The queue goes
// first: while the record stays, no other claim can bind to a queue that
// still holds the owner's messages.
func unclaim(ch *amqp.Channel, queue string) error {
	if err := ch.ExchangeDelete(OwnerRecord(queue), false, false); err != nil && !isAMQPCode(err, amqp.NotFound) {
		return &amqpStepError{kind: "owner record", name: OwnerRecord(queue), err: err}
	}
	return nil
}

// refusal reads RabbitMQ's PRECONDITION_FAILED on a declare: the argument
// or flag refused, and the value current, "inequivalent arg
// 'alternate-exchange' ...: received 'b' but current is 'a'" (3.8 and
// later), "... but current is the value 'a' of type 'longstr'" (before).
var refusal = regexp.MustCompile(`inequivalent arg '([^']*)'.* current is (?:the value )?'([^']*)'`)

func refusalOf(err error) []string {
	var ae *amqp.Error
	if errors.As(err, &ae) {
		return refusal.FindStringSubmatch(ae.Reason)
	}
	return nil
}

// refusedArg is the argument or flag a refused declare names.
func refusedArg(err error) string {
	if m := refusalOf(err); m != nil {
		return m[1]
	}
	return ""
}

// recordedClaim is the claim a refused declare names; empty when the
// refusal names none (a record exchange someone made by hand).
func recordedClaim(err error) string {
	if m := refusalOf(err); m != nil && m[1] == "alternate-exchange" {
		return m[2]
	}
	return ""
}
