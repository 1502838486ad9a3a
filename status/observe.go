package status

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// observation is the input worked out once: what is wrong, what KEDA says,
// what the pods show. The status fields are read off it.
type observation struct {
	in    Input
	actor *v1alpha1.AsyncActor
	// stamp is the clock as stored in timestamps. Kubernetes serializes
	// times to the second, so a stored time must already be whole seconds
	// for the status to read back equal to what was computed.
	stamp       metav1.Time
	terminating bool
	pods        podReport
	// issue is the workload problem the status reports, if any.
	issue   *issue
	scaling scalingState
	desired *int32
}

// issue is something wrong: the status value it leads to and the condition
// reason and message that describe it.
type issue struct {
	status  string
	reason  string
	message string
}

func observe(in Input) *observation {
	actor := in.Actor
	if actor == nil {
		actor = &v1alpha1.AsyncActor{}
	}
	if stillCreating(in) {
		in.Workload = nil
	}
	o := &observation{
		in:          in,
		actor:       actor,
		stamp:       metav1.NewTime(in.Now.Truncate(time.Second)),
		terminating: actor.DeletionTimestamp != nil,
		pods:        analyzePods(in.Pods, in.Now),
	}
	o.issue = o.workloadIssue()
	o.scaling = o.scalingState()
	o.desired = o.desiredReplicas()
	return o
}

// stillCreating: the actor was Creating and its workload has no pods yet
// (the Deployment controller's first status reports none) and reports no
// failure. Such a workload is still being created: counting it as
// observed would write an Updating status that changes nothing the user
// would act on, and then another once its first pod appears.
func stillCreating(in Input) bool {
	w := in.Workload
	return w != nil && in.Actor != nil && in.Actor.Status.Status == Creating &&
		w.Replicas == 0 && w.Failure == nil && (w.DesiredReplicas == nil || *w.DesiredReplicas > 0)
}

// workloadIssue is the first workload problem in status order. Problems of
// the spec come before what the pods show: an invalid spec is never
// applied, so the pods still run the last valid one and their troubles are
// not the thing to fix first.
func (o *observation) workloadIssue() *issue {
	if len(o.in.SpecProblems) > 0 {
		return &issue{WorkloadError, "InvalidSpec", invalidSpecMessage(o.in.SpecProblems)}
	}
	if len(o.in.SecretProblems) > 0 {
		return &issue{ConfigError, "SecretUnusable", "not applied: " + strings.Join(o.in.SecretProblems, "; ")}
	}
	if len(o.in.MissingSecrets) > 0 {
		return &issue{ConfigError, "SecretNotFound", o.missingSecretsMessage()}
	}
	if o.pods.worst != nil {
		return o.pods.worst
	}
	if w := o.in.Workload; w != nil && w.Failure != nil {
		return &issue{WorkloadError, w.Failure.Reason, w.Kind + " " + w.Name + ": " + w.Failure.Message}
	}
	return nil
}

// since is when the previous status's condition of type t turned False,
// or now if it was not False: the start of the current failure.
func (o *observation) since(t string) time.Time {
	for _, c := range o.actor.Status.Conditions {
		if c.Type == t && c.Status == metav1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return o.stamp.Time
}

func (o *observation) workloadKind() string {
	if o.in.Workload != nil && o.in.Workload.Kind != "" {
		return o.in.Workload.Kind
	}
	return o.actor.Spec.Workload.Kind
}

func (o *observation) workloadName() string {
	if o.in.Workload != nil && o.in.Workload.Name != "" {
		return o.in.Workload.Name
	}
	return o.actor.Name
}
