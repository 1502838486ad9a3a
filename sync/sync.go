// Package sync answers Metacontroller's sync and customize hooks for
// AsyncActors: decode, validate, ensure the queue, build the children,
// compute the status.
package sync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// Handler answers sync hooks. It holds no per-actor state.
type Handler struct {
	Config *config.Config
	// Transports is nil when queues are not to be touched (render).
	Transports transport.Lookup
	Script     asyaruntime.Script
	Now        func() time.Time
	// QueueTimeout bounds each broker call of one sync.
	QueueTimeout time.Duration
}

var errNoParent = errors.New("parent does not decode")

// Sync computes the desired children and status for one request.
func (h *Handler) Sync(ctx context.Context, req *hook.SyncRequest) (*hook.Response, error) {
	actor, specErr := hook.DecodeParent(req.Parent)
	if actor == nil {
		return nil, specErr
	}
	plan := h.plan(actor, specErr, req)
	if plan.found && !plan.standby {
		plan.transport, plan.retryAfter = h.ensureQueue(ctx, plan)
	}
	return plan.respond(h.Now())
}

// Render returns the children a sync would return, touching no broker.
func (h *Handler) Render(actor *v1alpha1.AsyncActor) ([]children.Object, error) {
	actor.Spec = actor.Spec.WithDefaults()
	t, problem := h.lookupTransport(actor.Spec.Transport)
	if problem != nil {
		return nil, fmt.Errorf("%s/%s: %s", actor.Namespace, actor.Name, problem.Message)
	}
	if problems := validate(actor.Name, actor.Spec, t); len(problems) > 0 {
		return nil, fmt.Errorf("%s/%s: invalid spec: %s", actor.Namespace, actor.Name, strings.Join(problems, "; "))
	}
	return children.Build(h.input(actor, t, false, false)), nil
}

func (h *Handler) input(actor *v1alpha1.AsyncActor, t config.Transport, noKEDA, standby bool) children.Input {
	return children.Input{
		Actor:                  actor,
		Transport:              t,
		SidecarImage:           h.Config.SidecarImage,
		SidecarSecurityContext: h.Config.SidecarSecurityContext,
		GatewayURL:             h.Config.GatewayURL,
		RuntimeScript:          h.Script.Source,
		RuntimeHash:            h.Script.Hash,
		NoKEDA:                 noKEDA,
		Standby:                standby,
	}
}

// lookupTransport finds the actor's transport, or says why it cannot.
func (h *Handler) lookupTransport(name string) (config.Transport, *status.Transport) {
	t, ok := h.Config.Transports[name]
	switch {
	case !ok:
		return t, &status.Transport{Reason: "TransportNotFound", Message: fmt.Sprintf(
			"spec.transport: transport %q is not configured (configured: %v)", name, h.Config.TransportNames())}
	case !t.Enabled:
		return t, &status.Transport{Reason: "TransportDisabled", Message: fmt.Sprintf(
			"spec.transport: transport %q is disabled in the service configuration", name)}
	}
	return t, nil
}

// ensureQueue makes the actor's queue exist and reads its counts. Failing
// counts never fail the sync: they are just left out.
// The duration returned is the broker's own retry hint, if any.
func (h *Handler) ensureQueue(ctx context.Context, p *plan) (status.Transport, time.Duration) {
	if h.Transports == nil {
		return status.Transport{Ready: true}, 0
	}
	broker, missing := transport.Find(h.Transports, p.config.Name)
	if missing != nil {
		return status.Transport{Reason: missing.Reason, Message: missing.Message}, 0
	}
	ctx, cancel := transport.WithTimeout(ctx, h.QueueTimeout)
	defer cancel()
	q := transport.QueueOf(p.actor)
	if err := broker.Ensure(ctx, q); err != nil {
		te := transport.AsError(err)
		return status.Transport{Reason: te.Reason, Message: te.Error()}, te.RetryAfter
	}
	state := status.Transport{Ready: true}
	if counts, err := broker.Counts(ctx, q); err == nil {
		state.Queued, state.Processing = counts.Queued, counts.Processing
	}
	return state, 0
}
