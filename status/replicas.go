package status

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilptr "k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// setReplicaFields fills the counts, references and display fields.
func (o *observation) setReplicaFields(st *v1alpha1.AsyncActorStatus) {
	st.TransportStatus = TransportStatusNotReady
	if o.in.Queue.Ready {
		st.TransportStatus = TransportStatusReady
	}
	st.ScalingMode = ScalingModeManual
	if o.in.ScalingActive {
		st.ScalingMode = ScalingModeKEDA
		st.ScaledObjectRef = &v1alpha1.NamespacedName{Name: o.actor.Name, Namespace: o.actor.Namespace}
	}
	st.QueuedMessages = copyPtr(o.in.Queue.Queued)
	st.ProcessingMessages = copyPtr(o.in.Queue.Processing)
	// The spec's, for kubectl's columns: the flat shape has other names
	// for them, or no field at all (docs/design.md#status).
	spec := o.actor.Spec
	st.MinReplicas, st.MaxReplicas = copyPtr(spec.Scaling.MinReplicas), copyPtr(spec.Scaling.MaxReplicas)
	st.WorkloadKind = spec.Workload.Kind
	if u := o.in.Queue.Unroutable; u != nil {
		st.Unroutable = &v1alpha1.UnroutableStatus{Queue: u.Queue, Messages: copyPtr(u.Messages), Message: u.Message}
	}

	if o.terminating && o.in.Workload == nil {
		// The finalize hook observes no workload: what was last known of
		// it stays, rather than a made-up drop to zero.
		keepWorkloadFields(st, &o.actor.Status)
		return
	}
	o.setCounts(st)
}

// setCounts reads the counts off the workload's status; a workload not
// observed yet has none of anything.
func (o *observation) setCounts(st *v1alpha1.AsyncActorStatus) {
	var w Workload
	if o.in.Workload != nil {
		w = *o.in.Workload
		st.WorkloadRef = &v1alpha1.WorkloadReference{
			APIVersion: "apps/v1", Kind: o.workloadKind(), Name: o.workloadName(), Namespace: o.actor.Namespace,
		}
	}
	ready, total := w.ReadyReplicas, w.Replicas
	st.Replicas = ptr(ready)
	st.ReadyReplicas = ptr(ready)
	st.TotalReplicas = ptr(total)
	st.PendingReplicas = ptr(max(total-ready, 0))
	st.FailingPods = ptr(o.pods.failing)
	st.DesiredReplicas = copyPtr(o.desired)
	st.ReadyReplicasSummary = fmt.Sprintf("%d/%d", ready, total)
	st.LastScaleTime, st.LastScaleDirection = o.lastScale(ready)
}

// lastScale records a scale event when the number of ready pods differs
// from the previous status's. Without a previous count there is nothing
// to compare with, so the first observation is not an event: that keeps
// an actor whose status was lost from claiming a scale that never
// happened. A new actor still gets its first scale-up recorded, because
// its status says 0 ready while it is Creating.
func (o *observation) lastScale(ready int32) (*metav1.Time, string) {
	prev := o.actor.Status
	switch {
	case prev.ReadyReplicas == nil || *prev.ReadyReplicas == ready:
		return copyPtr(prev.LastScaleTime), prev.LastScaleDirection
	case ready > *prev.ReadyReplicas:
		return copyPtr(&o.stamp), DirectionUp
	}
	return copyPtr(&o.stamp), DirectionDown
}

// desiredReplicas is the spec's, or when KEDA scales, the workload's
// spec.replicas once KEDA reports its HPA: the HPA writes its wish there
// (and KEDA itself, between zero and the first replicas), so the workload,
// a child, says what the HPA wants without Metacontroller watching HPAs.
func (o *observation) desiredReplicas() *int32 {
	if o.in.Standby {
		return ptr(int32(0))
	}
	if !o.in.ScalingActive {
		return copyPtr(o.actor.Spec.Workload.Replicas)
	}
	if o.hpaName() == "" {
		return nil
	}
	if w := o.in.Workload; w != nil && w.DesiredReplicas != nil {
		return ptr(*w.DesiredReplicas)
	}
	return ptr(int32(0))
}

// setOperatorSummaries fills the summaries the Asya operator writes and
// its users' scripts read, from the fields and conditions already set.
// Its lastScaleFormatted ("5m ago (up)") is left out: it changes as time
// passes, and the status must not (the Last-Scale column shows the age of
// lastScaleTime instead).
func setOperatorSummaries(st *v1alpha1.AsyncActorStatus) {
	current := utilptr.Deref(st.Replicas, 0)
	st.ReplicasSummary = fmt.Sprintf("%d/%d", current, utilptr.Deref(st.DesiredReplicas, current))
	ready, total := 0, 0
	for _, t := range componentConditions {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
			total++
			if c.Status == metav1.ConditionTrue {
				ready++
			}
		}
	}
	st.ReadySummary = fmt.Sprintf("%d/%d", ready, total)
}

func keepWorkloadFields(st, prev *v1alpha1.AsyncActorStatus) {
	st.Replicas = copyPtr(prev.Replicas)
	st.ReadyReplicas = copyPtr(prev.ReadyReplicas)
	st.TotalReplicas = copyPtr(prev.TotalReplicas)
	st.PendingReplicas = copyPtr(prev.PendingReplicas)
	st.FailingPods = copyPtr(prev.FailingPods)
	st.DesiredReplicas = copyPtr(prev.DesiredReplicas)
	st.ReadyReplicasSummary = prev.ReadyReplicasSummary
	if prev.WorkloadRef != nil {
		ref := *prev.WorkloadRef
		st.WorkloadRef = &ref
	}
	st.LastScaleTime = copyPtr(prev.LastScaleTime)
	st.LastScaleDirection = prev.LastScaleDirection
}

func ptr[T any](v T) *T { return &v }

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr(*p)
}
