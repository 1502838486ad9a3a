package sync

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// plan is one sync worked out: what was asked, what is wrong, what the
// broker said. respond turns it into the answer.
type plan struct {
	h        *Handler
	req      *hook.SyncRequest
	actor    *v1alpha1.AsyncActor
	config   config.Transport
	problems []string
	found    bool // the transport is configured and enabled
	// standby: another actor of the same name owns the queue, so this one
	// neither touches it nor consumes from it.
	standby    bool
	transport  status.Transport
	retryAfter time.Duration
	noKEDA     bool
}

func (h *Handler) plan(actor *v1alpha1.AsyncActor, specErr error, req *hook.SyncRequest) *plan {
	actor.Spec = actor.Spec.WithDefaults()
	p := &plan{h: h, req: req, actor: actor}
	if specErr != nil {
		p.problems = append(p.problems, specErr.Error())
	}
	t, problem := h.lookupTransport(actor.Spec.Transport)
	p.config = t
	if problem != nil {
		p.transport = *problem
		return p
	}
	p.found = true
	p.problems = append(p.problems, validate(actor.Name, actor.Spec, t)...)
	p.noKEDA = actor.Spec.Scaling.Enabled && req.Children.ScaledObjects == nil
	rivals := transport.Rivals(actor, req.Related.AsyncActors.List())
	if owner, mine := transport.Owner(transport.ClaimantOf(actor), rivals); !mine {
		p.standby = true
		p.transport = queueConflict(actor, owner)
	}
	p.checkPodSecurity()
	return p
}

// queueConflict is the status of an actor whose queue another actor owns.
func queueConflict(actor *v1alpha1.AsyncActor, owner transport.Claimant) status.Transport {
	return status.Transport{Reason: transport.ReasonQueueConflict, Message: fmt.Sprintf(
		"queue %s on transport %q belongs to AsyncActor %s, the first actor of this name on that transport: "+
			"this actor runs no replicas and leaves the queue alone; rename it, or delete %s to hand the queue over",
		v1alpha1.QueueName(actor.Name), actor.Spec.Transport, owner, owner)}
}

// valid reports whether children may be built. An invalid actor keeps its
// children exactly as they were and gets nothing new. A broker failure
// does not make the actor invalid: its workload keeps running.
func (p *plan) valid() bool {
	return p.found && len(p.problems) == 0
}

func (p *plan) respond(now time.Time) (*hook.Response, error) {
	kids, err := p.children()
	if err != nil {
		return nil, err
	}
	result := status.Compute(p.statusInput(now))
	return &hook.Response{
		Status:             &result.Status,
		Children:           kids,
		ResyncAfterSeconds: seconds(p.resyncAfter(result.ResyncAfter)),
	}, nil
}

// resyncAfter prefers the broker's own hint (SQS's 60 s deletion rule).
func (p *plan) resyncAfter(fromStatus time.Duration) time.Duration {
	if p.retryAfter > 0 {
		return p.retryAfter
	}
	return fromStatus
}

func seconds(d time.Duration) float64 { return math.Ceil(d.Seconds()) }

func (p *plan) children() ([]map[string]any, error) {
	if !p.valid() {
		observed, err := p.req.AllChildren()
		if err != nil {
			return nil, err
		}
		return keepObserved(observed)
	}
	objs := children.Build(p.h.input(p.actor, p.config, p.noKEDA, p.standby))
	out := make([]map[string]any, 0, len(objs))
	for _, obj := range objs {
		m, err := hook.Child(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (p *plan) statusInput(now time.Time) status.Input {
	in := status.Input{
		Actor:          p.actor,
		Workload:       p.observedWorkload(),
		ScalingEnabled: p.actor.Spec.Scaling.Enabled && !p.noKEDA && !p.standby,
		KEDAMissing:    p.noKEDA,
		Standby:        p.standby,
		ScaledObject:   p.scaledObject(),
		HPA:            p.hpa(),
		Pods:           p.pods(),
		MissingSecrets: p.missingSecrets(),
		SpecProblems:   p.problems,
		Transport:      p.transport,
		Now:            now,
	}
	return in
}

func (p *plan) observedWorkload() *status.Workload {
	if p.actor.Spec.Workload.Kind == v1alpha1.KindStatefulSet {
		if sts := hook.Get(p.req.Children.StatefulSets, p.actor.Name); sts != nil {
			return status.WorkloadFromStatefulSet(sts.Typed())
		}
		return nil
	}
	if d := hook.Get(p.req.Children.Deployments, p.actor.Name); d != nil {
		return status.WorkloadFromDeployment(d.Typed())
	}
	return nil
}

func (p *plan) scaledObject() *kedav1alpha1.ScaledObject {
	if so := hook.Get(p.req.Children.ScaledObjects, p.actor.Name); so != nil {
		return so.Typed()
	}
	return nil
}

// hpa is KEDA's HorizontalPodAutoscaler for the actor.
func (p *plan) hpa() *autoscalingv2.HorizontalPodAutoscaler {
	if h := hook.Get(p.req.Related.HPAs, "keda-hpa-"+p.actor.Name); h != nil {
		return h.Typed()
	}
	return nil
}

func (p *plan) pods() []corev1.Pod {
	var out []corev1.Pod
	for _, pod := range hook.Sorted(p.req.Related.Pods) {
		out = append(out, pod.Typed())
	}
	return out
}

// missingSecrets lists referenced Secrets that Metacontroller looked for
// and did not find. Without a Secret group nothing was looked for.
func (p *plan) missingSecrets() []string {
	if p.req.Related.Secrets == nil {
		return nil
	}
	var missing []string
	for _, ref := range p.config.SecretRefs() {
		if hook.Get(p.req.Related.Secrets, ref.Name) == nil && !contains(missing, ref.Name) {
			missing = append(missing, ref.Name)
		}
	}
	return missing
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// AnnotationLastApplied is where Metacontroller keeps what it last applied.
const AnnotationLastApplied = "metacontroller.k8s.io/last-applied-configuration"

// keepObserved answers with every observed child as it was last applied,
// so an invalid spec changes and deletes nothing.
func keepObserved(observed hook.Objects) ([]map[string]any, error) {
	out := []map[string]any{}
	for _, obj := range observed.All() {
		kept, err := lastApplied(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, kept)
	}
	return out, nil
}

func lastApplied(obj *unstructured.Unstructured) (map[string]any, error) {
	if raw, ok := obj.GetAnnotations()[AnnotationLastApplied]; ok {
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err == nil {
			return m, nil
		}
	}
	// Not applied by Metacontroller (adopted): keep what is there, minus
	// what the server owns.
	kept := obj.DeepCopy()
	unstructured.RemoveNestedField(kept.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences", "selfLink"} {
		unstructured.RemoveNestedField(kept.Object, "metadata", f)
	}
	return kept.Object, nil
}
