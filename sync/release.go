package sync

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

// releaseQueue is the queue step of an actor being deleted: the queue is
// deleted unless there is none to delete or it is not the actor's to
// delete. Ready means the queue is confirmed gone or kept on purpose, and
// the actor is then finalized at once: its children need no waiting for,
// since garbage collection removes them through their owner references,
// and the Asya sidecar only declares its queue passively, so a pod still
// running cannot bring a deleted queue back.
func (h *Handler) releaseQueue(ctx context.Context, a *assessment) status.QueueState {
	if a.actor.Annotations[AnnotationQueueDeletionPolicy] == PolicyRetain || !a.found {
		return status.QueueState{Ready: true}
	}
	if kept, ok := a.keptFor(); ok {
		return kept
	}
	broker, state, ok := h.broker(a)
	if !ok {
		return state
	}
	ctx, cancel := context.WithTimeout(ctx, transport.DefaultTimeout)
	defer cancel()
	q := transport.QueueOf(a.actor)
	if err := broker.Delete(ctx, q); err != nil {
		te := transport.AsError(err)
		return status.QueueState{Reason: te.Reason, Message: "deleting queue " + q.Name() + ": " + te.Error()}
	}
	return status.QueueState{Ready: true}
}

// keptFor says why the queue stays, if it does: another actor of the same
// name on the same transport owns it, or will as soon as this one is gone,
// and gets it with its messages. Related actors keyed by bare name (hook
// version v1) may hide an actor of the same name in another namespace, so
// then nothing is deleted at all.
func (a *assessment) keptFor() (status.QueueState, bool) {
	queue := v1alpha1.QueueName(a.actor.Name)
	switch {
	case a.req.Related.AsyncActors.KeyedByName():
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is kept: Metacontroller sent the actors of this name keyed by name only (hook version v1), "+
				"which cannot tell actors of one name in different namespaces apart; set version: v2 on the CompositeController's hooks", queue)}, true
	case a.standby:
		return status.QueueState{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is left, messages and all, to AsyncActor %s, which owns it", queue, a.owner)}, true
	}
	return status.QueueState{}, false
}
