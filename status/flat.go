package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Phases of the flat status, as upstream's compositions write them.
const (
	PhaseCreating = "Creating"
	PhaseReady    = "Ready"
	PhaseNapping  = "Napping"
)

// generationExtras are the status fields only one generation has, by
// generation: nested actors have none.
var generationExtras = map[v1alpha1.Generation]func(st *v1alpha1.AsyncActorStatus, in Input){
	v1alpha1.Flat: func(st *v1alpha1.AsyncActorStatus, in Input) {
		st.FlatStatus = flatStatus(st, in.QueueIdentifier, in.QueueURL)
	},
}

// flatStatus is what upstream's tools read of a flat actor, derived from
// the status already computed, so both always agree.
func flatStatus(st *v1alpha1.AsyncActorStatus, queueID, queueURL string) v1alpha1.FlatStatus {
	phase := PhaseCreating
	switch {
	case st.Status == Napping:
		phase = PhaseNapping
	case meta.IsStatusConditionTrue(st.Conditions, ConditionReady):
		phase = PhaseReady
	}
	infra := &v1alpha1.Infrastructure{
		Queue:    readiness(st, ConditionTransportReady),
		Workload: &v1alpha1.WorkloadReadiness{Ready: meta.IsStatusConditionTrue(st.Conditions, ConditionWorkloadReady), Replicas: st.TotalReplicas, ReadyReplicas: st.ReadyReplicas},
	}
	infra.KEDA = kedaReadiness(st)
	return v1alpha1.FlatStatus{Phase: phase, QueueIdentifier: queueID, QueueURL: queueURL, Infrastructure: infra}
}

// kedaReadiness is ScalingReady's, which is there exactly when scaling is
// on. With scaling off KEDA has nothing to do, and is ready, as upstream's
// compositions say then.
func kedaReadiness(st *v1alpha1.AsyncActorStatus) *v1alpha1.Readiness {
	if meta.FindStatusCondition(st.Conditions, ConditionScalingReady) == nil {
		return &v1alpha1.Readiness{Ready: true, Message: "scaling is off: KEDA scales nothing"}
	}
	return readiness(st, ConditionScalingReady)
}

func readiness(st *v1alpha1.AsyncActorStatus, typ string) *v1alpha1.Readiness {
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		return &v1alpha1.Readiness{}
	}
	return &v1alpha1.Readiness{Ready: c.Status == metav1.ConditionTrue, Message: c.Message}
}
