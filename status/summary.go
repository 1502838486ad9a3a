package status

import "time"

// statusValue is the first status that applies, in the order of docs/design.md#status,
// with one decision of ours: Creating comes after the errors but before
// ScalingError. A transport error, an invalid spec or a missing Secret is
// known before any workload exists, and an actor whose spec is invalid
// never gets one, so Creating first would hide the reason forever; KEDA,
// on the other hand, may complain about the missing scale target until the
// workload it points at exists.
func (o *observation) statusValue() string {
	switch {
	case o.terminating:
		return Terminating
	case !o.in.Queue.Ready:
		return TransportError
	case o.issue != nil:
		return o.issue.status
	case o.in.Workload == nil:
		return Creating
	case o.scaling.failed:
		return ScalingError
	}
	return o.steadyStatus()
}

// steadyStatus picks among the healthy and transitional statuses. A
// transition (scaling, rolling out, starting) that has left a pod not
// ready for DegradedAfter is no longer in progress but stuck: from then
// on the actor is Degraded.
func (o *observation) steadyStatus() string {
	w := o.in.Workload
	stuck := o.stuck()
	switch {
	case o.napping():
		return Napping
	case !stuck && o.in.ScalingActive && o.desired != nil && *o.desired > w.ReadyReplicas:
		return ScalingUp
	// Compared with the pods of the current template, so that the
	// surge pods of a rolling update do not look like a scale-down.
	case !stuck && o.in.ScalingActive && o.desired != nil && *o.desired < w.UpdatedReplicas:
		return ScalingDown
	case !stuck && o.updating():
		return Updating
	case stuck:
		return Degraded
	}
	return Running
}

// napping: KEDA has scaled the workload to zero and no pod is left.
func (o *observation) napping() bool {
	return o.in.ScalingActive && o.desired != nil && *o.desired == 0 && o.in.Workload.Replicas == 0
}

// updating is a rollout in progress, as `kubectl rollout status` sees one:
// the controller has not seen the latest generation, pods of the current
// template are missing or not yet available, or pods of an older one
// remain.
func (o *observation) updating() bool {
	w := o.in.Workload
	return w.ObservedGeneration < w.Generation ||
		(w.DesiredReplicas != nil && w.UpdatedReplicas < *w.DesiredReplicas) ||
		w.Replicas > w.UpdatedReplicas ||
		w.AvailableReplicas < w.UpdatedReplicas
}

// stuck: fewer pods are ready than exist, and one has been not ready for
// DegradedAfter.
func (o *observation) stuck() bool {
	left, short := o.degradedIn()
	return short && left <= 0
}

// degradedIn is how long until the actor becomes Degraded, and whether it
// is short of ready pods at all. The clock starts when the pod that has
// been not ready the longest turned not ready (its Ready condition's
// lastTransitionTime), so a long rollout of pods that each get ready in
// time never counts. Without pods to look at, it starts when WorkloadReady
// turned False.
func (o *observation) degradedIn() (time.Duration, bool) {
	w := o.in.Workload
	if w == nil || w.ReadyReplicas >= w.Replicas {
		return 0, false
	}
	var since time.Time
	switch {
	case o.pods.notReady != nil:
		since = o.pods.notReady.since
	case len(o.in.Pods) == 0:
		since = o.since(ConditionWorkloadReady)
	default:
		// The pods listed are all ready: the workload's counts lag
		// behind them.
		return 0, false
	}
	return min(since.Add(DegradedAfter).Sub(o.in.Now), DegradedAfter), true
}
