package sync

import (
	"fmt"
	"math"
	"strings"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/finalize"
	"github.com/asya-sh/asya-sync/internal/dynamicapply"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// assessment is one hook call worked out: what was asked, what is wrong
// with it, who owns the queue and, after the queue step, what the broker
// said. Its methods turn it into the answer.
type assessment struct {
	req       *hook.SyncRequest
	actor     *v1alpha1.AsyncActor
	transport config.Transport
	found     bool // the transport is configured and enabled
	problems  []string
	// secretProblems: referenced Secret values the transport cannot use.
	secretProblems []string
	// owner owns the actor's queue among the actors of its claim, and mine
	// says it is this one (transport.Owner).
	owner transport.Claimant
	mine  bool
	// standby: the actor neither touches its queue nor consumes from it,
	// because another actor of its claim owns it (mine is false) or the
	// broker records one of its queues to another claim (held).
	standby bool
	held    *transport.Held
	// scalingActive: KEDA owns the replica count; the children and the
	// status both follow this one verdict.
	scalingActive bool
	// build is what the children are built from, and given what their
	// pods are given, worked out once for the Pod Security check and the
	// workload.
	build      children.Input
	given      children.Pods
	queue      status.QueueState
	retryAfter time.Duration
	// unwatched: what Metacontroller does not send, by configuration.
	unwatched status.Unwatched
	// podsRead are the pods the service listed itself (readPods).
	podsRead []corev1.Pod
}

// assess validates the actor and decides who owns its queue.
func (h *Handler) assess(req *hook.SyncRequest) *assessment {
	refused := h.serviceDefaults(req.Actor)
	a := &assessment{req: req, actor: req.Actor, unwatched: h.unwatched(req.Actor.Spec.Transport)}
	if req.SpecError != nil {
		a.problems = append(a.problems, req.SpecError.Error())
	}
	if refused != nil {
		a.queue = *refused // no transport: nothing ensured, released or built
	} else {
		a.transport, a.queue, a.found = h.transportOf(a.actor.Spec)
	}
	if a.found {
		a.problems = append(a.problems, validate(a.actor, a.transport)...)
		a.problems = append(a.problems, validateRuntimeUpdate(a.actor)...)
		a.secretProblems = a.checkSecrets()
		owner, mine := transport.Owner(a.actor, h.claimants(req))
		a.owner, a.mine, a.standby = owner, mine, !mine
		if a.standby {
			a.queue = queueConflict(a.actor, owner)
		}
	}
	return a
}

// plan decides what the children are built from, once the queue step has
// said whether the actor stands by.
func (h *Handler) plan(a *assessment) {
	a.scalingActive = a.actor.Spec.Scaling.On() && !a.kedaMissing() && !a.standby
	if a.valid() {
		a.build = h.childrenInput(a)
		a.given = children.PodsOf(a.build)
		a.checkPodSecurity()
	}
}

// transportOf finds the actor's transport; when it cannot be used, the
// queue state says why.
func (h *Handler) transportOf(spec v1alpha1.AsyncActorSpec) (config.Transport, status.QueueState, bool) {
	name := spec.Transport
	t, ok := h.Config.Transports[name]
	switch {
	case name == "":
		return t, status.QueueState{Reason: "TransportNotFound", Message: fmt.Sprintf(
			"%s: none is chosen (enabled transports: %v): set flatActors.transport in the service configuration "+
				"(the chart's config.flatActors.transport), or spec.transport on the actor",
			spec.FieldPath("spec.transport"), h.Config.EnabledNames())}, false
	case !ok:
		return t, status.QueueState{Reason: "TransportNotFound", Message: fmt.Sprintf(
			"%s: transport %q is not configured (configured: %v)", spec.FieldPath("spec.transport"), name, h.Config.TransportNames())}, false
	case !t.Enabled:
		return t, status.QueueState{Reason: "TransportDisabled", Message: fmt.Sprintf(
			"%s: transport %q is disabled in the service configuration", spec.FieldPath("spec.transport"), name)}, false
	}
	return t, status.QueueState{}, true
}

func (h *Handler) childrenInput(a *assessment) children.Input {
	claims, _ := a.actor.Spec.Workload.ClaimTemplates() // validated
	return children.Input{
		Service:        h.service(),
		Actor:          a.actor,
		Transport:      a.transport.Kind,
		ClaimTemplates: claims,
		Decided: children.Decided{
			ScalingActive: a.scalingActive,
			Standby:       a.standby,
			Held:          a.held,
			Restricted:    a.enforcesRestricted(),
			Running:       a.running(),
		},
	}
}

// service is what the service's configuration gives every actor's
// children.
func (h *Handler) service() children.Service {
	cfg := h.Config
	return children.Service{
		SidecarImage:           cfg.SidecarImage,
		FlatSidecarImage:       cfg.FlatActors.SidecarImage,
		SidecarSecurityContext: cfg.SidecarSecurityContext,
		GatewayURL:             cfg.GatewayURL,
		Ends:                   cfg.FlatActors.Ends(),
		Runtime: children.RuntimeService{Script: h.Script, HTTPScript: h.FlatScript,
			Delivery: cfg.RuntimeDelivery, Image: cfg.RuntimeImage, Update: cfg.RuntimeUpdate},
	}
}

// serviceDefaults completes the actor with what the service configuration
// decides: the transport of a flat actor, from its composition or
// flatActors.transport. refused, when not nil, is why it has none.
func (h *Handler) serviceDefaults(actor *v1alpha1.AsyncActor) (refused *status.QueueState) {
	actor.Spec.Transport, refused = generationOf(actor).transport(actor.Spec, h.Config)
	return refused
}

// claimants are the related actors, with the service's defaults, that
// transport.Owner weighs against the parent.
func (h *Handler) claimants(req *hook.SyncRequest) []*v1alpha1.AsyncActor {
	actors := req.Related.AsyncActors.List()
	for _, a := range actors {
		h.serviceDefaults(a)
	}
	return actors
}

// endQueues are the namespace's sink and sump, for a flat actor.
func (h *Handler) endQueues(actor *v1alpha1.AsyncActor) []transport.Queue {
	return transport.EndQueues(actor.Namespace, h.Config.FlatActors.Ends().QueuesOf(actor), v1alpha1.DefaultProcessing)
}

// claim is what finalize decides the queue's fate from.
func (h *Handler) claim(a *assessment) finalize.Claim {
	return finalize.Claim{Actor: a.actor, Owner: a.owner, Mine: a.mine,
		KeyedByName: a.req.Related.AsyncActors.KeyedByName(), Unmanaged: !a.transport.Kind.ManageQueues(),
		NotCreated: a.transport.Kind.ManageQueues() && !a.transport.Kind.AutoCreateQueues(),
		Shared:     h.Config.FlatActors.Ends().Shares(a.actor)}
}

// kedaMissing: Metacontroller sent no ScaledObject group, so the cluster
// has no KEDA.
func (a *assessment) kedaMissing() bool { return a.req.Children.ScaledObjects == nil }

// queueConflict is the status of an actor whose queue another actor owns.
func queueConflict(actor *v1alpha1.AsyncActor, owner transport.Claimant) status.QueueState {
	return status.QueueState{Reason: transport.ReasonQueueConflict, Message: fmt.Sprintf(
		"queue %s on transport %q belongs to AsyncActor %s, the first actor of this name on that transport: "+
			"this actor runs no replicas and leaves the queue alone; rename it, or delete %s to hand the queue over",
		transport.QueueOf(actor).Name(), actor.Spec.Transport, owner, owner)}
}

// heldConflict is the status of an actor one of whose queues the broker
// records to another claim.
func heldConflict(actor *v1alpha1.AsyncActor, held *transport.Held) status.QueueState {
	return status.QueueState{Reason: transport.ReasonQueueConflict, Message: fmt.Sprintf(
		"%s on transport %q belongs to %s, which declared it first (the broker records its owner): %s",
		queueRole(actor, held.Queue), actor.Spec.Transport, transport.DescribeClaim(held.Holder), heldAdvice(actor, held.Queue))}
}

// heldStill is the status of an actor that stood by for a queue the broker
// recorded to another claim, when the broker does not say again.
func heldStill(actor *v1alpha1.AsyncActor, held *transport.Held, err *transport.Error) status.QueueState {
	return status.QueueState{Reason: transport.ReasonQueueConflict, Message: fmt.Sprintf(
		"%s on transport %q was recorded to %s when the broker last answered, and the broker has not answered otherwise since: "+
			"this actor keeps running no replicas until it does; %s",
		queueRole(actor, held.Queue), actor.Spec.Transport, transport.DescribeClaim(held.Holder), err)}
}

// queueRole names one of the actor's queues by what it is to the actor.
func queueRole(actor *v1alpha1.AsyncActor, queue string) string {
	switch q := transport.QueueOf(actor); queue {
	case q.Name():
		return "queue " + queue
	case q.DLQName():
		return "dead-letter queue " + queue
	}
	return fmt.Sprintf("queue %s, where the routes of namespace %s end,", queue, actor.Namespace)
}

// heldAdvice says what the actor does about a held queue, and what the
// user can do.
func heldAdvice(actor *v1alpha1.AsyncActor, queue string) string {
	if q := transport.QueueOf(actor); queue != q.Name() && queue != q.DLQName() {
		return "this actor runs no replicas, so that nothing it routes there reaches that actor, " +
			"and leaves the queue alone; rename that actor, or delete it to hand the queue over"
	}
	return fmt.Sprintf("this actor runs no replicas and leaves the queue alone; rename this actor (%s), "+
		"or delete that one to hand the queue over", actor.Spec.QueueActorField())
}

// valid reports whether children may be built. An invalid actor keeps its
// children exactly as they were and gets nothing new. A broker failure
// does not make the actor invalid: its workload keeps running.
func (a *assessment) valid() bool {
	return a.found && len(a.problems) == 0 && len(a.secretProblems) == 0
}

// children are the desired children: while the actor is being deleted or
// its spec is invalid, the observed ones as they were last applied, so
// that Metacontroller changes and deletes none of them (once the actor is
// gone, garbage collection removes them through their owner references,
// which spares Metacontroller a delete per child); else the ones built
// from the spec.
func (a *assessment) children() ([]hook.Child, error) {
	if !a.req.Finalizing && a.valid() {
		if built := a.built(); a.valid() {
			return built, nil
		}
	}
	return keepObserved(a.req)
}

// built builds the children of a valid spec. What Metacontroller's apply
// would change (two entries of a list sharing their merge key) or KEDA's
// webhook would refuse is added to the problems: the spec is then invalid.
func (a *assessment) built() []hook.Child {
	objs := children.Build(a.build, a.given)
	out := make([]hook.Child, 0, len(objs))
	for _, obj := range objs {
		a.problems = append(a.problems, mergeProblems(a.actor.Spec, obj)...)
		if so, ok := obj.(*kedav1alpha1.ScaledObject); ok {
			a.problems = append(a.problems, kedaProblems(a.actor.Spec, so)...)
		}
		out = append(out, hook.Built(obj))
	}
	return out
}

// mergeProblems describes the lists of a child whose entries would collide
// under Metacontroller's apply, naming the actor's field where the child's
// is the actor's pod template (only workloads have spec.template), as the
// spec's shape writes it.
func mergeProblems(spec v1alpha1.AsyncActorSpec, obj children.Object) []string {
	var problems []string
	for _, c := range dynamicapply.Collisions(obj) {
		if path, ok := strings.CutPrefix(c.Path, "spec.template."); ok {
			list := podTemplate + "." + path
			c.Path = spec.FieldPath(list, fmt.Sprintf("%s[%s=%s]", list, c.Key, c.Value))
		} else {
			c.Path = fmt.Sprintf("%s %s: %s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), c.Path)
		}
		problems = append(problems, c.String())
	}
	return problems
}

// minFinalizeResync paces finalize retries while the queue cannot be released.
const minFinalizeResync = 5 * time.Second

func (a *assessment) response(kids []hook.Child, result status.Result) *hook.Response {
	resp := &hook.Response{Status: &result.Status, Children: kids}
	switch {
	case a.req.Finalizing && a.queue.Ready:
		resp.Finalized = true
	case a.req.Finalizing:
		resp.ResyncAfterSeconds = max(result.ResyncAfter, minFinalizeResync).Seconds()
	case a.retryAfter > 0:
		// The broker's own hint (SQS's 60 s deletion rule) comes first.
		resp.ResyncAfterSeconds = seconds(a.retryAfter)
	default:
		resp.ResyncAfterSeconds = seconds(result.ResyncAfter)
	}
	return resp
}

func seconds(d time.Duration) float64 { return math.Ceil(d.Seconds()) }
