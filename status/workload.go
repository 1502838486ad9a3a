package status

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// WorkloadFromDeployment takes what the status needs of a Deployment.
func WorkloadFromDeployment(d *appsv1.Deployment) *Workload {
	if d == nil {
		return nil
	}
	return &Workload{
		Kind:               v1alpha1.KindDeployment,
		Name:               d.Name,
		Generation:         d.Generation,
		ObservedGeneration: d.Status.ObservedGeneration,
		DesiredReplicas:    copyPtr(d.Spec.Replicas),
		Replicas:           d.Status.Replicas,
		ReadyReplicas:      d.Status.ReadyReplicas,
		UpdatedReplicas:    d.Status.UpdatedReplicas,
		AvailableReplicas:  d.Status.AvailableReplicas,
		Failure:            deploymentFailure(d.Status.Conditions),
	}
}

// deploymentFailure reads the Deployment controller's own verdicts: pods it
// may not create (quota, admission) and a rollout past its deadline. Pod
// problems, when there are any, are reported before these: they say why.
func deploymentFailure(conds []appsv1.DeploymentCondition) *WorkloadFailure {
	for _, c := range conds {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return podSecurityRefusal(&WorkloadFailure{Reason: c.Reason, Message: c.Message})
		}
	}
	for _, c := range conds {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return &WorkloadFailure{Reason: c.Reason, Message: c.Message}
		}
	}
	return nil
}

// WorkloadFromStatefulSet takes what the status needs of a StatefulSet.
func WorkloadFromStatefulSet(s *appsv1.StatefulSet) *Workload {
	if s == nil {
		return nil
	}
	return &Workload{
		Kind:               v1alpha1.KindStatefulSet,
		Name:               s.Name,
		Generation:         s.Generation,
		ObservedGeneration: s.Status.ObservedGeneration,
		DesiredReplicas:    copyPtr(s.Spec.Replicas),
		Replicas:           s.Status.Replicas,
		ReadyReplicas:      s.Status.ReadyReplicas,
		UpdatedReplicas:    s.Status.UpdatedReplicas,
		AvailableReplicas:  s.Status.AvailableReplicas,
	}
}

// Settled: the workload's controller has seen its spec, and every replica
// the spec wants is updated, ready and available, with no failure of the
// controller's own. Its pods can then tell nothing that its counts do
// not: no pod is waiting, crashing or unscheduled.
func (w *Workload) Settled() bool {
	want := int32(1)
	if w.DesiredReplicas != nil {
		want = *w.DesiredReplicas
	}
	return w.ObservedGeneration >= w.Generation && w.Failure == nil &&
		w.Replicas == want && w.UpdatedReplicas == want && w.ReadyReplicas == want && w.AvailableReplicas == want
}
