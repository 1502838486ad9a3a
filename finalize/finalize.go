// Package finalize decides the teardown of an AsyncActor being deleted:
// whether its queue is deleted or stays, and deleting it. The sync
// pipeline (sync.Handler.Answer) runs it as the queue step of a finalizing
// request.
package finalize

import (
	"context"
	"fmt"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// AnnotationQueueDeletionPolicy set to PolicyRetain keeps the queue when
// the actor is deleted.
const (
	AnnotationQueueDeletionPolicy = "asya.sh/queue-deletion-policy"
	PolicyRetain                  = "Retain"
)

// released is the state of a queue that is gone or kept on purpose: the
// actor is then finalized.
var released = status.QueueState{Ready: true}

// Claim is what the fate of the actor's queue depends on.
type Claim struct {
	Actor *v1alpha1.AsyncActor
	// Owner owns the queue among the actors of the name on the transport;
	// Mine says it is Actor.
	Owner transport.Claimant
	Mine  bool
	// KeyedByName: the related actors came keyed by bare name (hook
	// version v1), which may hide an actor of the same name in another
	// namespace.
	KeyedByName bool
}

// Kept says why the queue stays, if it does: the actor asks to retain it,
// another actor of the same name on the same transport owns it or will as
// soon as this one is gone and gets it with its messages, or the request
// cannot tell whether such an actor exists.
func Kept(c Claim) (status.QueueState, bool) {
	queue := v1alpha1.QueueName(c.Actor.Name)
	switch {
	case c.Actor.Annotations[AnnotationQueueDeletionPolicy] == PolicyRetain:
		return released, true
	case c.KeyedByName:
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is kept: Metacontroller sent the actors of this name keyed by name only (hook version v1), "+
				"which cannot tell actors of one name in different namespaces apart; set version: v2 on the CompositeController's hooks", queue)}, true
	case !c.Mine:
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is left, messages and all, to AsyncActor %s, which owns it", queue, c.Owner)}, true
	}
	return status.QueueState{}, false
}

// Delete deletes the queue, messages and all. Ready in the result means
// it is confirmed gone.
func Delete(ctx context.Context, broker transport.Broker, q transport.Queue) status.QueueState {
	ctx, cancel := context.WithTimeout(ctx, transport.DefaultTimeout)
	defer cancel()
	if err := broker.Delete(ctx, q); err != nil {
		te := transport.AsError(err)
		return status.QueueState{Reason: te.Reason, Message: "deleting queue " + q.Name() + ": " + te.Error()}
	}
	return released
}
