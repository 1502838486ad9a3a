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
}

// Release is the queue step of an actor being deleted, on the broker of
// its configured transport (brokers nil: none is touched, as in render).
// The queue is deleted unless it is not the actor's to delete (Kept), or
// the broker records it to another claim (transport.Held).
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
	err := transport.Attempt(ctx, func(ctx context.Context) error { return broker.Delete(ctx, q) })
	if err == nil {
		return released
	}
	if held, ok := transport.HeldBy(err); ok {
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is left, messages and all, to %s, which the broker records as its owner", q.Name(), transport.DescribeClaim(held.Holder))}
	}
	return status.QueueState{Reason: err.Reason, Message: "deleting queue " + q.Name() + ": " + err.Error()}
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
