// Package status computes an AsyncActor's status from what the sync hook
// observed: the actor, its workload, KEDA's objects, its pods and the
// transport's answer. It is a pure function of its input and the injected
// clock, and its result is a fixpoint: feeding the status it returns back
// into the actor and computing again with the same observations returns the
// same status (docs/design.md#hook-contract), so Metacontroller writes it at most once.
package status

import (
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Status values (docs/design.md#status).
const (
	Terminating      = "Terminating"
	TransportError   = "TransportError"
	ImagePullError   = "ImagePullError"
	RuntimeError     = "RuntimeError"
	SidecarError     = "SidecarError"
	PendingResources = "PendingResources"
	VolumeError      = "VolumeError"
	ConfigError      = "ConfigError"
	WorkloadError    = "WorkloadError"
	Creating         = "Creating"
	ScalingError     = "ScalingError"
	Napping          = "Napping"
	ScalingUp        = "ScalingUp"
	ScalingDown      = "ScalingDown"
	Updating         = "Updating"
	Degraded         = "Degraded"
	Running          = "Running"
)

// Order is every status value in the order statusValue chooses them: the
// first that applies is the actor's. The CRD's description of
// status.status (what kubectl explain prints) and docs/design.md#status
// list them in this order; a test holds them to it.
var Order = []string{
	Terminating, TransportError,
	ImagePullError, RuntimeError, SidecarError, PendingResources, VolumeError, ConfigError, WorkloadError,
	Creating, ScalingError,
	Napping, ScalingUp, ScalingDown, Updating, Degraded,
	Running,
}

// Condition types.
const (
	ConditionTransportReady = "TransportReady"
	ConditionWorkloadReady  = "WorkloadReady"
	ConditionScalingReady   = "ScalingReady"
	// ConditionReady is the aggregate that kstatus readers (kubectl wait,
	// Flux, Argo CD) look for.
	ConditionReady = "Ready"
)

// Values of the transportStatus, scalingMode and lastScaleDirection fields.
const (
	TransportStatusReady    = "Ready"
	TransportStatusNotReady = "NotReady"
	ScalingModeKEDA         = "KEDA"
	ScalingModeManual       = "Manual"
	DirectionUp             = "up"
	DirectionDown           = "down"
)

// Time-based decisions. Each is measured from a timestamp that is part of
// the observed world (a condition's lastTransitionTime), never from a
// counter, so that the status stays a fixpoint between two crossings.
const (
	// DegradedAfter is how long a pod may stay not ready before the actor
	// is Degraded rather than starting, scaling or updating.
	DegradedAfter = 5 * time.Minute
	// PodStartTimeout is how long a scheduled pod may wait for its sandbox
	// (volumes mounted, network set up) before it counts as a VolumeError.
	PodStartTimeout = 2 * time.Minute
	// KEDAGracePeriod is how long KEDA may take to report on a new
	// ScaledObject and create its HPA before that is a ScalingError.
	KEDAGracePeriod = 2 * time.Minute
	// KEDAPollInterval paces resyncs while waiting for KEDA.
	KEDAPollInterval = 10 * time.Second
	// MinBackoff and MaxBackoff bound the resync delay after an error.
	MinBackoff = 5 * time.Second
	MaxBackoff = 5 * time.Minute
)

// Input is everything the status depends on.
type Input struct {
	// Actor as observed: metadata (generation, deletionTimestamp), spec
	// (defaulted, as hook.DecodeParent returns it) and the previous status.
	Actor *v1alpha1.AsyncActor
	// Workload is the observed Deployment or StatefulSet; nil if none yet.
	Workload *Workload
	// KEDAMissing: the cluster has no ScaledObject resource, so scaling,
	// if on, is not applied.
	KEDAMissing bool
	// Standby: another actor of the same name owns the queue, so this
	// one is built with no replicas and no ScaledObject (Queue says who
	// the owner is).
	Standby bool
	// ScalingActive: KEDA scales the workload, as spec.scaling.enabled
	// asks, for the cluster has KEDA and the actor owns its queue; the
	// children were built the same way (children.Input.ScalingActive).
	ScalingActive bool
	// ScaledObject is the observed child; nil if none.
	ScaledObject *kedav1alpha1.ScaledObject
	// Pods are the actor's pods, in any order.
	Pods []corev1.Pod
	// MissingSecrets are referenced Secrets that were looked for and not
	// found.
	MissingSecrets []string
	// SecretProblems are referenced Secret keys whose values the transport
	// cannot use, each naming the Secret and key; any makes the actor
	// invalid, like SpecProblems.
	SecretProblems []string
	// SpecProblems are validation failures, each naming the field; any
	// makes the spec invalid.
	SpecProblems []string
	// Queue is the outcome of this hook call's queue operation.
	Queue QueueState
	// QueueIdentifier and QueueURL name the actor's queue for the flat
	// status, as upstream's does: its ARN on SQS, else its name, and its
	// URL where the transport has one.
	QueueIdentifier, QueueURL string
	// Unwatched is what Metacontroller was not asked to watch (the
	// service's watch configuration): the conditions say so, so that a
	// reader can tell "not told" from "fine".
	Unwatched Unwatched
	// Now is the clock.
	Now time.Time
}

// Unwatched: related objects the hook does without.
type Unwatched struct {
	// Pods: no pod-level health; the workload's counts only.
	Pods bool
	// PodsUnread says why the pods of a workload that is not settled
	// could not be listed (watch.pods whileUnhealthy), if they could not.
	PodsUnread string
	// Secrets: the transport references Secrets that are not looked for.
	Secrets bool
	// SecretsUnread says why the Secrets the transport references could
	// not be read (watch.secrets read), if they could not.
	SecretsUnread string
	// Namesakes: actors of the same name in other namespaces are not seen.
	Namesakes bool
	// NamesakesUnread says why the actors that claim the queue could not
	// be listed (watch.namesakes read), if they could not.
	NamesakesUnread string
}

// Workload is what the status needs of a Deployment or StatefulSet.
type Workload struct {
	Kind               string // Deployment | StatefulSet
	Name               string
	Generation         int64
	ObservedGeneration int64
	// DesiredReplicas is spec.replicas of the observed object.
	DesiredReplicas *int32
	// From .status.
	Replicas, ReadyReplicas, UpdatedReplicas, AvailableReplicas int32
	// Failure is what the workload's controller reports it cannot do
	// (a rollout past its deadline, pods it may not create), if anything.
	Failure *WorkloadFailure
}

// WorkloadFailure is a failing condition of the workload itself.
type WorkloadFailure struct {
	Reason, Message string
}

// QueueState is the outcome of the queue operation of this hook call:
// ensuring the queue (sync) or releasing it (finalize).
type QueueState struct {
	Ready bool
	// Reason and Message say why the transport is not ready (e.g.
	// TransportNotFound, BrokerUnavailable, QueueDeletedRecently). When
	// ready they may override the condition's default reason and message.
	Reason, Message string
	// Queued and Processing are message counts; nil means unknown and is
	// left out of the status.
	Queued, Processing *int64
	// Unroutable is where the namespace's unroutable messages go, for a
	// flat actor whose transport may drop them; nil leaves it out.
	Unroutable *v1alpha1.UnroutableStatus
}

// Result is the computed status and when to look again.
type Result struct {
	Status v1alpha1.AsyncActorStatus
	// ResyncAfter is when a time-based decision may change the status,
	// or when to retry after an error; 0 means no time-based resync.
	ResyncAfter time.Duration
}

// Compute derives the actor's status from the observations in in.
func Compute(in Input) Result {
	o := observe(in)
	st := v1alpha1.AsyncActorStatus{ObservedGeneration: o.actor.Generation, Conditions: ownConditions(o.actor.Status.Conditions)}
	o.setConditions(&st)
	o.setReplicaFields(&st)
	setOperatorSummaries(&st)
	st.Status = o.statusValue()
	if extra := generationExtras[o.actor.Spec.AsyaGeneration]; extra != nil {
		extra(&st, in)
	}
	return Result{Status: st, ResyncAfter: o.resyncAfter(&st)}
}
