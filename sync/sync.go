// Package sync answers Metacontroller's sync, finalize and customize hooks
// for AsyncActors, and renders an actor's children for the command line.
// Sync and finalize are one pipeline (Answer); the request comes decoded
// and defaulted (hook.DecodeSyncRequest).
package sync

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/finalize"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// Handler answers hooks. It holds no per-actor state.
type Handler struct {
	Config *config.Config
	// Transports is nil when queues are not to be touched (render).
	Transports transport.Lookup
	Script     asyaruntime.Script
	// FlatScript is the runtime of flat actors, which talks HTTP.
	FlatScript asyaruntime.Script
	// Pods lists an actor's pods for watch.pods whileUnhealthy; nil when
	// the service has no API client.
	Pods PodLister
	// Actors lists the actors that claim a queue, for watch.namesakes
	// read; nil when the service has no API client.
	Actors ActorLister
	// Secrets gets the Secrets a transport references, for watch.secrets
	// read; nil when the service has no API client.
	Secrets SecretGetter
	// Claimants keeps an owner's claimants between reads; nil keeps none.
	Claimants *ClaimantsCache
	Now       func() time.Time
}

// Answer is the whole of a sync or finalize, top to bottom: validate the
// actor, ensure its queue (or release it when the actor is being
// deleted), build the children, compute the status.
func (h *Handler) Answer(ctx context.Context, req *hook.SyncRequest) (*hook.Response, error) {
	listed, unread := h.readClaimants(ctx, req)
	secretsUnread := h.readSecrets(ctx, req)
	a := h.assess(req)
	if secretsUnread != nil {
		a.unwatched.SecretsUnread = secretsUnread.Error()
	}
	if listed != nil {
		h.Claimants.keep(claimantsKeyOf(req), listed, a.mine && !req.Finalizing, h.Now())
	}
	h.readPods(ctx, a)
	if unread != nil && !req.Finalizing { // a finalize says so in its reason
		a.unwatched.NamesakesUnread = unread.Error()
	}
	switch {
	case a.found && !namesQueue(a.actor):
		a.queue = unnamedQueue(a.actor, req.Finalizing)
	case req.Finalizing && a.found && unread != nil:
		// Whether another actor still uses the queue is not known: it is
		// kept, and the actor, until it is.
		a.queue = status.QueueState{Reason: "ClaimantsUnread", Message: "the queue is kept until asya-sync can read " +
			"which other actors claim it: " + unread.Error()}
	case req.Finalizing && a.found:
		a.queue = finalize.Release(ctx, h.claim(a), h.Transports)
	case req.Finalizing:
		a.queue = status.QueueState{Ready: true} // no transport of ours, no queue to release
	case a.found && !a.standby:
		a.queue, a.retryAfter = h.ensureQueue(ctx, a)
	}
	h.plan(a)
	kids, err := a.children()
	if err != nil {
		return nil, err
	}
	result := status.Compute(a.statusInput(h.Now()))
	return a.response(kids, result), nil
}

// namesQueue: the actor names its queue. A flat spec without spec.actor
// does not, and asya-<namespace>- is nobody's: such an actor ensures,
// releases and counts nothing.
func namesQueue(actor *v1alpha1.AsyncActor) bool {
	name, _ := actor.QueueActor()
	return name != ""
}

// unnamedQueue is the queue state of an actor that names no queue: nothing
// to release when it is deleted, else why it has none.
func unnamedQueue(actor *v1alpha1.AsyncActor, finalizing bool) status.QueueState {
	if finalizing {
		return status.QueueState{Ready: true}
	}
	return status.QueueState{Reason: "QueueUnnamed", Message: fmt.Sprintf(
		"%s is empty: the actor names no queue, and none is made until it does", actor.Spec.QueueActorField())}
}

// Render returns the children a sync would answer in a cluster with KEDA,
// touching no broker; a problem with the actor is an error.
func (h *Handler) Render(actor *v1alpha1.AsyncActor) ([]map[string]any, error) {
	kedaInstalled := hook.ObservedChildren{ScaledObjects: hook.Group[hook.ScaledObject]{}}
	a := h.assess(&hook.SyncRequest{Actor: actor, Children: kedaInstalled})
	h.plan(a)
	if !a.found {
		return nil, fmt.Errorf("%s/%s: %s", actor.Namespace, actor.Name, a.queue.Message)
	}
	var built []hook.Child
	if a.valid() {
		built = a.built() // which may find more problems
	}
	if !a.valid() {
		return nil, fmt.Errorf("%s/%s: invalid spec: %s", actor.Namespace, actor.Name, strings.Join(a.problems, "; "))
	}
	kids := make([]map[string]any, len(built))
	for i, c := range built {
		m, err := c.Object()
		if err != nil {
			return nil, err
		}
		kids[i] = m
	}
	return kids, nil
}

// ensureQueue makes the actor's queues exist (a flat actor's namespace's
// sink and sump, then its own) and reads its counts. Failing counts never
// fail the sync: they are just left out. A queue the broker records to
// another claim makes the actor stand by; so does a broker that cannot be
// asked, when the broker's last answer was that (standBy).
// The duration returned is the broker's own retry hint, if any.
func (h *Handler) ensureQueue(ctx context.Context, a *assessment) (status.QueueState, time.Duration) {
	broker, state, ok := h.broker(a)
	if !ok {
		return state, 0
	}
	q := transport.QueueOf(a.actor)
	var held []*transport.Held
	err := transport.Attempt(ctx, func(ctx context.Context) error {
		for _, each := range append(h.endQueues(a.actor), q) {
			err := broker.Ensure(ctx, each)
			if h, ok := transport.HeldBy(err); ok {
				held = append(held, h)
			} else if err != nil {
				return err
			}
		}
		if len(held) > 0 {
			return nil
		}
		if q.Scoped {
			// What the ensure learned, kept with it while the ensure
			// cache answers: no broker call of its own.
			state.Reason, state.Message = adoptedState(a.actor, transport.KnownAdoptedQueue(broker, q))
		}
		if counts, err := broker.Counts(ctx, q); err == nil {
			state.Queued, state.Processing = counts.Queued, counts.Processing
		}
		state.Unroutable = catchUnroutable(ctx, broker, a.transport.Kind, q)
		return nil
	})
	if standing, ok := a.standBy(held, err); ok {
		if err != nil {
			return standing, err.RetryAfter
		}
		return standing, 0
	}
	if err != nil {
		return status.QueueState{Reason: err.Reason, Message: err.Error()}, err.RetryAfter
	}
	state.Ready = true
	return state, 0
}

// adoptedState is what TransportReady says of a flat actor's queue that
// asya-sync adopted (docs/design.md#adopted-queues): that it is kept when
// the actor is deleted, or, annotated so, that it is not. Nothing is said
// of a queue asya-sync created.
func adoptedState(actor *v1alpha1.AsyncActor, adopted bool) (reason, message string) {
	switch {
	case !adopted:
		return "", ""
	case finalize.AsksAdopted(finalize.Claim{Actor: actor}):
		return ReasonQueueAdopted, finalize.AdoptedMessage(actor, "is kept, messages and all, when the actor is deleted")
	}
	return ReasonQueueAdopted, fmt.Sprintf("queue %s existed before asya-sync first declared it, so asya-sync adopted it; "+
		"the actor's annotation %s: %s has it deleted, messages and all, with the actor",
		transport.QueueOf(actor).Name(), finalize.AnnotationQueueDeletionPolicy, finalize.PolicyDelete)
}

// ReasonQueueAdopted is TransportReady's reason for a flat actor whose
// queue asya-sync adopted.
const ReasonQueueAdopted = "QueueAdopted"

// standBy decides, from the queue step's outcome, whether the actor stands
// by for a queue the broker records to another claim: its own queue if
// that is held, else the first held of its namespace's. Without an answer from
// the broker, the last one stands (children.AnnotationQueueHeld): a
// sidecar started now would consume the other claim's messages once the
// broker is back.
func (a *assessment) standBy(held []*transport.Held, err *transport.Error) (status.QueueState, bool) {
	switch {
	case len(held) > 0:
		a.held = held[0]
		for _, h := range held {
			if h.Queue == transport.QueueOf(a.actor).Name() {
				a.held = h
			}
		}
		a.standby = true
		return heldConflict(a.actor, a.held), true
	case err != nil:
		if a.held = a.heldBefore(); a.held != nil {
			a.standby = true
			return heldStill(a.actor, a.held, err), true
		}
	}
	return status.QueueState{}, false
}

// catchUnroutable ensures and counts the queues that catch what the
// exchanges of q's actor route to no queue (docs/design.md#unroutable-messages);
// the metrics report every count. It returns what a flat actor's status
// says of its namespace's: nil for a nested actor, whose transport's
// catch holds every namespace's messages, and for a transport that drops
// nothing. A failure here fails nothing else: the actor's own queue works,
// and the status says that unroutable messages may be dropped.
func catchUnroutable(ctx context.Context, broker transport.Broker, kind transport.Kind, q transport.Queue) *v1alpha1.UnroutableStatus {
	catches, uncaught := transport.UnroutableQueues(kind, q)
	var reported *v1alpha1.UnroutableStatus
	if uncaught != "" && q.Scoped {
		reported = &v1alpha1.UnroutableStatus{Message: uncaught}
	}
	for _, c := range catches {
		got := &v1alpha1.UnroutableStatus{Queue: c.Name()}
		if err := broker.Ensure(ctx, c); err != nil {
			got.Message = "unroutable messages may be dropped: asya-sync could not set up their catch: " + err.Error()
		} else if counts, err := broker.Counts(ctx, c); err == nil {
			got.Messages = counts.Queued
		}
		if c.Scoped {
			reported = got
		}
	}
	return reported
}

// broker is the broker of the actor's transport. Without one (ok false)
// the state says why: a broker that is not open, or none wanted (render).
func (h *Handler) broker(a *assessment) (broker transport.Broker, state status.QueueState, ok bool) {
	if h.Transports == nil {
		return nil, status.QueueState{Ready: true}, false
	}
	broker, missing := transport.Find(h.Transports, a.transport.Name)
	if missing != nil {
		return nil, status.QueueState{Reason: missing.Reason, Message: missing.Message}, false
	}
	return broker, status.QueueState{}, true
}
