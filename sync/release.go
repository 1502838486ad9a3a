package sync

import (
	"context"

	"github.com/asya-sh/asya-sync/finalize"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// releaseQueue is the queue step of an actor being deleted: the queue is
// deleted unless there is none to delete or it is not the actor's to
// delete (finalize.Kept). Ready means the queue is confirmed gone or kept
// on purpose, and the actor is then finalized at once: its children need
// no waiting for, since garbage collection removes them through their
// owner references, and the Asya sidecar only declares its queue
// passively, so a pod still running cannot bring a deleted queue back.
func (h *Handler) releaseQueue(ctx context.Context, a *assessment) status.QueueState {
	if !a.found {
		return status.QueueState{Ready: true}
	}
	claim := finalize.Claim{Actor: a.actor, Owner: a.owner, Mine: !a.standby,
		KeyedByName: a.req.Related.AsyncActors.KeyedByName()}
	if kept, ok := finalize.Kept(claim); ok {
		return kept
	}
	broker, state, ok := h.broker(a)
	if !ok {
		return state
	}
	return finalize.Delete(ctx, broker, transport.QueueOf(a.actor))
}
