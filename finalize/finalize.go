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

// Finalize deletes the actor's queue and reports whether the actor is
// gone: finalized only once the queue is confirmed deleted (or retained,
// or never existed) and Metacontroller observes no children.
func (h *Handler) Finalize(ctx context.Context, req *hook.Request) (*hook.Response, error) {
	actor, _ := hook.DecodeParent(req.Parent)
	if actor == nil {
		return nil, fmt.Errorf("parent does not decode")
	}
	actor.Spec = actor.Spec.WithDefaults()
	state := h.deleteQueue(ctx, actor)
	result := status.Compute(status.Input{
		Actor:     actor,
		Transport: state,
		Now:       h.Now(),
	})
	resp := &hook.Response{Status: &result.Status, Children: []map[string]any{}}
	resp.Finalized = state.Ready && len(req.Children.All()) == 0
	if !resp.Finalized {
		resp.ResyncAfterSeconds = max(result.ResyncAfter, minResync).Seconds()
	}
	return resp, nil
}

// deleteQueue deletes the queue unless there is none to delete. Ready in
// the result means the queue is confirmed gone or is kept on purpose.
func (h *Handler) deleteQueue(ctx context.Context, actor *v1alpha1.AsyncActor) status.Transport {
	gone := status.Transport{Ready: true}
	if actor.Annotations[AnnotationQueueDeletionPolicy] == PolicyRetain {
		return gone
	}
	t, ok := h.Config.Transports[actor.Spec.Transport]
	if !ok || !t.Enabled {
		return gone
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
	return gone
}
