package status

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// condition is a condition's content; type, generation and transition
// time are added when it is set.
type condition struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// noting appends note to the message when on.
func (c condition) noting(on bool, note string) condition {
	if on {
		c.message += "; " + note
	}
	return c
}

// ownConditions copies the previous conditions this package manages, so
// that their lastTransitionTime survives while their status does not
// change. Anything else is dropped: the hook's status replaces the whole
// status, so a stray condition could only be a leftover.
func ownConditions(prev []metav1.Condition) []metav1.Condition {
	own := []metav1.Condition{}
	for _, c := range prev {
		switch c.Type {
		case ConditionTransportReady, ConditionWorkloadReady, ConditionScalingReady, ConditionReady:
			own = append(own, *c.DeepCopy())
		}
	}
	return own
}

func (o *observation) setConditions(st *v1alpha1.AsyncActorStatus) {
	u := o.in.Unwatched
	o.set(&st.Conditions, ConditionTransportReady, o.transportCondition().
		noting(u.Secrets, "referenced Secrets not checked (watch.secrets: false)").
		noting(u.SecretsUnread != "", "referenced Secrets not read: "+u.SecretsUnread).
		noting(u.Namesakes, "actors of this name in other namespaces not checked (watch.namesakes: false)").
		noting(u.NamesakesUnread != "", "actors claiming the queue not read: "+u.NamesakesUnread))
	o.set(&st.Conditions, ConditionWorkloadReady, o.workloadCondition().
		noting(u.Pods, "pod health not watched (watch.pods: false)").
		noting(u.PodsUnread != "", "pod health not read: "+u.PodsUnread))
	if o.actor.Spec.Scaling.On() {
		o.set(&st.Conditions, ConditionScalingReady, o.scaling.condition)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, ConditionScalingReady)
	}
	o.set(&st.Conditions, ConditionReady, readyCondition(st.Conditions))
}

// componentConditions are the conditions Ready aggregates, in status order.
var componentConditions = []string{ConditionTransportReady, ConditionWorkloadReady, ConditionScalingReady}

// readyCondition aggregates the others, as the kstatus conventions want:
// True when each is True, else False with the reason and message of the
// first that is not, in status order (transport, workload, scaling).
func readyCondition(conds []metav1.Condition) condition {
	for _, t := range componentConditions {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status != metav1.ConditionTrue {
			return condition{metav1.ConditionFalse, c.Reason, c.Message}
		}
	}
	return condition{metav1.ConditionTrue, "Ready", "the actor's queue, workload and scaling are as its spec asks"}
}

// set updates or adds a condition. The transition time is given so that
// meta.SetStatusCondition never reads the wall clock.
func (o *observation) set(conds *[]metav1.Condition, t string, c condition) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               t,
		Status:             c.status,
		Reason:             c.reason,
		Message:            c.message,
		ObservedGeneration: o.actor.Generation,
		LastTransitionTime: o.stamp,
	})
}

func (o *observation) transportCondition() condition {
	t := o.in.Queue
	switch {
	case !t.Ready:
		return condition{metav1.ConditionFalse, nonEmpty(t.Reason, "TransportNotReady"),
			nonEmpty(t.Message, fmt.Sprintf("transport %q is not ready", o.actor.Spec.Transport))}
	case o.terminating:
		return condition{metav1.ConditionTrue, nonEmpty(t.Reason, "QueueReleased"),
			nonEmpty(t.Message, "the actor is being deleted; its queue is deleted or, by policy, retained")}
	}
	return condition{metav1.ConditionTrue, nonEmpty(t.Reason, "QueueReady"),
		nonEmpty(t.Message, fmt.Sprintf("transport %q is ready and the actor's queue exists", o.actor.Spec.Transport))}
}

// workloadCondition says whether the workload runs as wanted, and if not,
// the first thing wrong with it in status order.
func (o *observation) workloadCondition() condition {
	switch {
	case o.terminating:
		return condition{metav1.ConditionFalse, Terminating, "the actor is being deleted; once it is gone, garbage collection removes its children"}
	case o.issue != nil:
		return condition{metav1.ConditionFalse, o.issue.reason, o.issue.message}
	case o.in.Workload == nil:
		return condition{metav1.ConditionFalse, "Creating", fmt.Sprintf("%s %s is being created and has no pods yet", o.workloadKind(), o.workloadName())}
	}
	w := o.in.Workload
	switch {
	case w.ReadyReplicas < w.Replicas:
		return condition{metav1.ConditionFalse, "NotAllReady", o.notAllReadyMessage()}
	case w.DesiredReplicas != nil && w.Replicas < *w.DesiredReplicas:
		return condition{metav1.ConditionFalse, "WaitingForReplicas",
			fmt.Sprintf("%s %s has %d of %d replicas", w.Kind, w.Name, w.Replicas, *w.DesiredReplicas)}
	case w.Replicas == 0:
		return condition{metav1.ConditionTrue, "ScaledToZero", fmt.Sprintf("%s %s is scaled to zero", w.Kind, w.Name)}
	}
	return condition{metav1.ConditionTrue, "AllReplicasReady",
		fmt.Sprintf("%s %s: %d/%d replicas ready", w.Kind, w.Name, w.ReadyReplicas, w.Replicas)}
}

// notAllReadyMessage counts the ready replicas. While pods are still
// starting, their progress (scheduled, containers started, ready before the
// workload counts them) is no news the user would act on, and each change
// of wording would cost a status write; once the actor is stuck, the
// message names the pod that has been not ready the longest.
func (o *observation) notAllReadyMessage() string {
	w := o.in.Workload
	msg := fmt.Sprintf("%s %s: %d/%d replicas ready", w.Kind, w.Name, w.ReadyReplicas, w.Replicas)
	if nr := o.pods.notReady; nr != nil && o.stuck() {
		msg += fmt.Sprintf("; pod %s is not ready", nr.name)
		if nr.message != "" {
			msg += ": " + nr.message
		}
	}
	return msg
}

func invalidSpecMessage(problems []string) string {
	return "invalid spec, not applied: " + strings.Join(problems, "; ")
}

func (o *observation) missingSecretsMessage() string {
	quoted := make([]string, len(o.in.MissingSecrets))
	for i, s := range o.in.MissingSecrets {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	noun := "Secret"
	if len(quoted) > 1 {
		noun = "Secrets"
	}
	return fmt.Sprintf("%s %s referenced by transport %q not found in namespace %q",
		noun, strings.Join(quoted, ", "), o.actor.Spec.Transport, o.actor.Namespace)
}
