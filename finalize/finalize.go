// Package finalize answers Metacontroller's finalize hook: an AsyncActor is
// being deleted, so its children go and its queue is deleted.
package finalize

import (
	"context"
	"fmt"
	"time"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// AnnotationQueueDeletionPolicy set to PolicyRetain keeps the queue.
const (
	AnnotationQueueDeletionPolicy = "asya.sh/queue-deletion-policy"
	PolicyRetain                  = "Retain"
)

// minResync paces finalize retries while children are still going away.
const minResync = 5 * time.Second

// Handler answers finalize hooks.
type Handler struct {
	Config       *config.Config
	Transports   transport.Lookup
	Now          func() time.Time
	QueueTimeout time.Duration
}

// Finalize releases the actor's queue and reports the actor finalized as
// soon as the queue is confirmed deleted, retained, handed to another
// actor, or never existed. Its children need no waiting for: the desired
// list is empty, and garbage collection removes whatever remains through
// the owner references once the actor is gone. The Asya sidecar only
// declares its queue passively, so a pod still running cannot bring a
// deleted queue back.
func (h *Handler) Finalize(ctx context.Context, req *hook.Request) (*hook.Response, error) {
	actor, _ := hook.DecodeParent(req.Parent)
	if actor == nil {
		return nil, fmt.Errorf("parent does not decode")
	}
	actor.Spec = actor.Spec.WithDefaults()
	state := h.releaseQueue(ctx, actor, req.Related)
	result := status.Compute(status.Input{
		Actor:     actor,
		Transport: state,
		Now:       h.Now(),
	})
	resp := &hook.Response{Status: &result.Status, Children: []map[string]any{}, Finalized: state.Ready}
	if !resp.Finalized {
		resp.ResyncAfterSeconds = max(result.ResyncAfter, minResync).Seconds()
	}
	return resp, nil
}

// releaseQueue deletes the queue unless there is none to delete or it is
// not the actor's to delete. Ready in the result means the queue is
// confirmed gone or is kept on purpose.
func (h *Handler) releaseQueue(ctx context.Context, actor *v1alpha1.AsyncActor, related hook.Objects) status.Transport {
	if actor.Annotations[AnnotationQueueDeletionPolicy] == PolicyRetain {
		return status.Transport{Ready: true}
	}
	t, ok := h.Config.Transports[actor.Spec.Transport]
	if !ok || !t.Enabled {
		return status.Transport{Ready: true}
	}
	if kept, ok := keptFor(actor, related); ok {
		return kept
	}
	broker, missing := transport.Find(h.Transports, t.Name)
	if missing != nil {
		return status.Transport{Reason: missing.Reason, Message: missing.Message}
	}
	ctx, cancel := transport.WithTimeout(ctx, h.QueueTimeout)
	defer cancel()
	q := transport.QueueOf(actor)
	if err := broker.Delete(ctx, q); err != nil {
		te := transport.AsError(err)
		return status.Transport{Reason: te.Reason, Message: "deleting queue " + q.Name() + ": " + te.Error()}
	}
	return status.Transport{Ready: true}
}

// keptFor says why the queue stays, if it does: another actor of the same
// name on the same transport owns it, or will as soon as this one is gone,
// and gets it with its messages. Related actors keyed by bare name (hook
// version v1) may hide an actor of the same name in another namespace, so
// then nothing is deleted at all.
func keptFor(actor *v1alpha1.AsyncActor, related hook.Objects) (status.Transport, bool) {
	queue, kind, apiVersion := v1alpha1.QueueName(actor.Name), v1alpha1.Kind, v1alpha1.GroupVersion.String()
	if related.KeyedByName(kind, apiVersion) {
		return status.Transport{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
			"queue %s is kept: Metacontroller sent the actors of this name keyed by name only (hook version v1), "+
				"which cannot tell actors of one name in different namespaces apart; set version: v2 on the CompositeController's hooks", queue)}, true
	}
	rivals := transport.Rivals(actor, related.List(kind, apiVersion))
	owner, mine := transport.Owner(transport.ClaimantOf(actor), rivals)
	if mine {
		return status.Transport{}, false
	}
	return status.Transport{Ready: true, Reason: "QueueKept", Message: fmt.Sprintf(
		"queue %s is left, messages and all, to AsyncActor %s, which owns it", queue, owner)}, true
}
