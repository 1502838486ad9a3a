// Package finalize is the teardown of an AsyncActor being deleted: whether
// its queue is deleted or stays, and for whom, and deleting it. The sync
// pipeline (sync.Handler.Answer) calls Release once, as the queue step of a
// finalizing request; the children are left to garbage collection.
package finalize

import (
	"context"
	"fmt"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// AnnotationQueueDeletionPolicy set to PolicyRetain keeps the queue when
// the actor is deleted; set to PolicyDelete it deletes a queue asya-sync
// did not create (queues.autoCreate: false), which is otherwise kept.
const (
	AnnotationQueueDeletionPolicy = "asya.sh/queue-deletion-policy"
	PolicyRetain                  = "Retain"
	PolicyDelete                  = "Delete"
)

// released is the state of a queue that is gone or kept on purpose: the
// actor is then finalized.
var released = status.QueueState{Ready: true}

// Claim is what the fate of the actor's queue depends on.
type Claim struct {
	Actor *v1alpha1.AsyncActor
	// Owner owns the queue among the actors of the name on the transport
	// (transport.Owner); Mine says it is Actor.
	Owner transport.Claimant
	Mine  bool
	// KeyedByName: the related actors came keyed by bare name (hook
	// version v1), which may hide an actor of the same name in another
	// namespace.
	KeyedByName bool
	// Unmanaged: the transport leaves its queues alone (queues.manage:
	// false).
	Unmanaged bool
	// NotCreated: the transport does not create its queues
	// (queues.autoCreate: false), so someone else provisioned this one.
	NotCreated bool
	// Shared: the queue is the namespace's sink or sump, which every flat
	// actor of the namespace routes to; it outlives the actor.
	Shared bool
	// Adopted: the broker records that asya-sync adopted the queue, which
	// existed without an owner record when first declared
	// (transport.Adopter). Release reads it fresh from the broker, never
	// from what a cached ensure learned.
	Adopted bool
}

// Release is the queue step of an actor being deleted, on the broker of
// its configured transport (brokers nil: none is touched, as in render).
// The queue is deleted unless it is not the actor's to delete (Kept), the
// broker records that asya-sync adopted it and the actor's generation
// keeps adopted queues (KeptAdopted), or the broker records it to another
// claim (transport.Held).
// Ready means the queue is confirmed gone or kept on purpose, and the actor
// is then finalized at once: its children need no waiting for, since
// garbage collection removes them through their owner references, and the
// Asya sidecar only declares its queue passively, so a pod still running
// cannot bring a deleted queue back.
func Release(ctx context.Context, c Claim, brokers transport.Lookup) status.QueueState {
	if kept, ok := Kept(c); ok {
		return kept
	}
	if brokers == nil {
		return released
	}
	broker, missing := transport.Find(brokers, c.Actor.Spec.Transport)
	if missing != nil {
		return status.QueueState{Reason: missing.Reason, Message: missing.Message}
	}
	q := transport.QueueOf(c.Actor)
	if AsksAdopted(c) {
		err := transport.Attempt(ctx, func(ctx context.Context) (err error) {
			c.Adopted, err = transport.AdoptedQueue(ctx, broker, q)
			return err
		})
		if err != nil {
			return failed(q, err)
		}
		if kept, ok := KeptAdopted(c); ok {
			return kept
		}
	}
	err := transport.Attempt(ctx, func(ctx context.Context) error { return broker.Delete(ctx, q) })
	if err == nil {
		return released
	}
	return failed(q, err)
}

// failed is the state of a queue step that failed: a queue the broker
// records to another claim is left to it, and the actor finalized.
func failed(q transport.Queue, err *transport.Error) status.QueueState {
	if held, ok := transport.HeldBy(err); ok {
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is left, messages and all, to %s, which the broker records as its owner", q.Name(), transport.DescribeClaim(held.Holder))}
	}
	return status.QueueState{Reason: err.Reason, Message: "deleting queue " + q.Name() + ": " + err.Error()}
}

// AsksAdopted says whether the queue's fate depends on its having been
// adopted (docs/design.md#adopted-queues): only a flat actor's queue
// does, when the actor does not ask for it to be deleted. The 0.3
// operator deleted its queues, and so does asya-sync for nested actors.
func AsksAdopted(c Claim) bool {
	_, flat := c.Actor.QueueActor()
	return flat && c.Actor.Annotations[AnnotationQueueDeletionPolicy] != PolicyDelete
}

// KeptAdopted is the rule for adopted queues: what asya-sync created it
// may delete, but the queue of a flat actor that it adopted (it existed
// without an owner record when asya-sync first declared it: upstream's
// Crossplane composition creates no queue, so someone else provisioned
// it) is kept, messages and all, unless the actor is annotated
// asya.sh/queue-deletion-policy: Delete.
func KeptAdopted(c Claim) (status.QueueState, bool) {
	if !c.Adopted || !AsksAdopted(c) {
		return status.QueueState{}, false
	}
	return status.QueueState{Ready: true, Reason: "QueueKept", Message: AdoptedMessage(c.Actor, "is left as it is, messages and all")}, true
}

// AdoptedMessage says of a flat actor's adopted queue what becomes of it
// on delete (verb: "is kept on delete", "is left as it is"), and how to
// change that.
func AdoptedMessage(actor *v1alpha1.AsyncActor, verb string) string {
	return fmt.Sprintf("queue %s %s: it existed before asya-sync first declared it, so asya-sync adopted it "+
		"and does not delete it; annotate the actor %s: %s to have it deleted with the actor",
		transport.QueueOf(actor).Name(), verb, AnnotationQueueDeletionPolicy, PolicyDelete)
}

// Kept says why the queue stays, if it does: the transport does not
// manage its queues, or does not create them (asya-sync never deletes a
// queue it did not create, unless the actor's deletion policy says
// Delete), the actor asks to retain it, another actor of the
// same name on the same transport owns it or will as
// soon as this one is gone and gets it with its messages, or the request
// cannot tell whether such an actor exists.
func Kept(c Claim) (status.QueueState, bool) {
	queue := transport.QueueOf(c.Actor).Name()
	switch {
	case c.Unmanaged:
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is left as it is: transport %q does not manage its queues (queues.manage: false)", queue, c.Actor.Spec.Transport)}, true
	case c.Actor.Annotations[AnnotationQueueDeletionPolicy] == PolicyRetain:
		return released, true
	case c.Shared:
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is kept: it is where every actor of namespace %s ends its routes", queue, c.Actor.Namespace)}, true
	case c.KeyedByName:
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is kept: Metacontroller sent the actors of this name keyed by name only (hook version v1), "+
				"which cannot tell actors of one name in different namespaces apart; set version: v2 on the CompositeController's hooks", queue)}, true
	case !c.Mine:
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is left, messages and all, to AsyncActor %s, which owns it", queue, c.Owner)}, true
	case c.NotCreated && c.Actor.Annotations[AnnotationQueueDeletionPolicy] != PolicyDelete:
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is left as it is, messages and all: transport %q does not create its queues (queues.autoCreate: false), "+
				"so asya-sync did not create it and does not delete it; annotate the actor %s: %s to have it deleted",
			queue, c.Actor.Spec.Transport, AnnotationQueueDeletionPolicy, PolicyDelete)}, true
	}
	return status.QueueState{}, false
}
