package status

import (
	"fmt"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// scalingState is the ScalingReady condition and what follows from it.
type scalingState struct {
	condition condition
	// failed: the status is ScalingError (unless something earlier applies).
	failed bool
	// poll is when to look again while waiting for KEDA; 0 if not waiting.
	poll time.Duration
}

// scalingState reads KEDA's own verdict on the ScaledObject (its Ready and
// Fallback conditions) and whether it reports its HPA. While KEDA has not
// answered yet the actor is waiting, not failing, for KEDAGracePeriod.
func (o *observation) scalingState() scalingState {
	switch {
	case !o.actor.Spec.Scaling.On():
		return scalingState{}
	case o.terminating:
		return scalingState{condition: condition{metav1.ConditionFalse, Terminating, "the actor is being deleted"}}
	case o.in.KEDAMissing:
		return failedScaling("KEDANotInstalled", fmt.Sprintf(
			"KEDA is not installed: the cluster has no ScaledObject resource (keda.sh/v1alpha1), so %s %s runs with %s (%d)",
			o.workloadKind(), o.workloadName(), o.actor.Spec.FieldPath("spec.workload.replicas"), *o.actor.Spec.Workload.Replicas))
	case o.in.Standby:
		return scalingState{condition: condition{metav1.ConditionFalse, o.in.Queue.Reason,
			"KEDA does not scale an actor that does not own its queue"}}
	case o.in.ScaledObject == nil && o.blocked():
		return scalingState{condition: condition{metav1.ConditionFalse, "ScaledObjectNotCreated", fmt.Sprintf(
			"ScaledObject %s is not created while the actor has errors", o.actor.Name)}}
	}
	c, failed := o.kedaVerdict()
	switch {
	case failed:
		return failedScaling(c.reason, c.message)
	case c.status != metav1.ConditionTrue:
		return o.waitForKEDA(c)
	}
	return scalingState{condition: c}
}

// blocked: the hook creates no new children while the spec is invalid or
// the transport is not ready, so a missing ScaledObject is expected.
func (o *observation) blocked() bool {
	return len(o.in.SpecProblems) > 0 || !o.in.Queue.Ready
}

func failedScaling(reason, message string) scalingState {
	return scalingState{condition: condition{metav1.ConditionFalse, reason, message}, failed: true}
}

// kedaVerdict is ScalingReady as KEDA's objects show it: True, False with
// failed set (KEDA rejected or cannot run the ScaledObject), or Unknown
// (KEDA has not answered yet).
func (o *observation) kedaVerdict() (condition, bool) {
	so := o.in.ScaledObject
	if so == nil {
		return condition{metav1.ConditionUnknown, "WaitingForKEDA", fmt.Sprintf("ScaledObject %s has not been created yet", o.actor.Name)}, false
	}
	ready := kedaCondition(so, kedav1alpha1.ConditionReady)
	switch {
	case ready == nil || ready.Status == metav1.ConditionUnknown:
		msg := fmt.Sprintf("KEDA has not reported ScaledObject %s ready yet", so.Name)
		if ready != nil && ready.Message != "" {
			msg += ": " + ready.Message
		}
		return condition{metav1.ConditionUnknown, "WaitingForKEDA", msg}, false
	case ready.Status == metav1.ConditionFalse:
		return condition{metav1.ConditionFalse, nonEmpty(ready.Reason, "ScaledObjectNotReady"),
			fmt.Sprintf("KEDA: ScaledObject %s is not ready: %s", so.Name, ready.Message)}, true
	}
	if fb := kedaCondition(so, kedav1alpha1.ConditionFallback); fb != nil && fb.Status == metav1.ConditionTrue {
		return condition{metav1.ConditionFalse, "FallbackActive",
			fmt.Sprintf("KEDA: ScaledObject %s uses its fallback replicas: %s", so.Name, fb.Message)}, true
	}
	if o.hpaName() == "" {
		return condition{metav1.ConditionUnknown, "WaitingForHPA", fmt.Sprintf(
			"KEDA has not created HorizontalPodAutoscaler %s yet", v1alpha1.HPAName(o.actor.Name))}, false
	}
	return condition{metav1.ConditionTrue, "ScaledObjectReady", fmt.Sprintf(
		"ScaledObject %s is ready; KEDA scales %s %s through HorizontalPodAutoscaler %s",
		so.Name, o.workloadKind(), o.workloadName(), o.hpaName())}, false
}

// hpaName is the HPA KEDA reports on the ScaledObject (status.hpaName,
// set once KEDA has created it), or "".
func (o *observation) hpaName() string {
	if o.in.ScaledObject == nil {
		return ""
	}
	return o.in.ScaledObject.Status.HpaName
}

// waitForKEDA keeps ScalingReady False while KEDA catches up, polling, and
// turns it into a ScalingError once the wait, measured from when the
// condition turned False, exceeds KEDAGracePeriod.
func (o *observation) waitForKEDA(c condition) scalingState {
	left := o.since(ConditionScalingReady).Add(KEDAGracePeriod).Sub(o.in.Now)
	if left <= 0 {
		return failedScaling("KEDANotResponding", fmt.Sprintf(
			"%s after %s; check that the KEDA operator is running", c.message, KEDAGracePeriod))
	}
	return scalingState{condition: condition{metav1.ConditionFalse, c.reason, c.message}, poll: min(left, KEDAPollInterval)}
}

func kedaCondition(so *kedav1alpha1.ScaledObject, t kedav1alpha1.ConditionType) *kedav1alpha1.Condition {
	for i := range so.Status.Conditions {
		if so.Status.Conditions[i].Type == t {
			return &so.Status.Conditions[i]
		}
	}
	return nil
}
