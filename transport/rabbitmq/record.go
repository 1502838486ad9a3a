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
const recordPrefix = "asya-sync.owner."

// OwnerRecord is the name of the queue's owner record.
func OwnerRecord(queue string) string { return recordPrefix + queue }

// claim declares the queue's owner record for claim; a record of another
// claim is a *transport.Held error. A queue without a record is claimed
// by the first claim to declare one: the record may come before the queue
// or long after it (queues created before records existed).
func claim(ch *amqp.Channel, queue, claim string) error {
	err := declareRecord(ch, queue, claim, false)
	switch {
	case isAMQPCode(err, amqp.PreconditionFailed):
		return transport.HeldError(queue, recordedClaim(err))
	case err != nil:
		return &amqpStepError{kind: "owner record", name: OwnerRecord(queue), err: err}
	}
	return nil
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
