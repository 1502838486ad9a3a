package v1alpha1

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=asya;asyas;asyncactor
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Failing",type=integer,JSONPath=`.status.failingPods`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.totalReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.status.minReplicas`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.status.maxReplicas`
// +kubebuilder:printcolumn:name="Last-Scale",type=date,JSONPath=`.status.lastScaleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.status.workloadKind`,priority=1
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.status.transportStatus`,priority=1
// +kubebuilder:printcolumn:name="Scaling",type=string,JSONPath=`.status.scalingMode`,priority=1
// +kubebuilder:printcolumn:name="Queued",type=integer,JSONPath=`.status.queuedMessages`,priority=1
// +kubebuilder:printcolumn:name="Processing",type=integer,JSONPath=`.status.processingMessages`,priority=1
// +kubebuilder:printcolumn:name="Direction",type=string,JSONPath=`.status.lastScaleDirection`,priority=1
// +kubebuilder:printcolumn:name="Actor",type=string,JSONPath=`.spec.actor`,priority=1
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.status.queueIdentifier`,priority=1
// +kubebuilder:printcolumn:name="Unroutable",type=integer,JSONPath=`.status.unroutable.messages`,priority=1
// +kubebuilder:selectablefield:JSONPath=`.spec.actor`

// AsyncActor is a queue-fed worker: a user container running Python handler
// code next to an injected sidecar, scaled by KEDA on queue depth.
// asya-sync turns it into a Deployment or StatefulSet, a runtime ConfigMap,
// and, with scaling on, a KEDA ScaledObject; its queue asya-<name> lives on
// the transport named in spec.transport. Deleting the actor deletes its
// queue with every message in it, unless the actor is annotated
// asya.sh/queue-deletion-policy: Retain.
type AsyncActor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the actor should run.
	Spec AsyncActorSpec `json:"spec"`
	// Status is what asya-sync last observed; it is written by Metacontroller
	// from the sync hook's answer, never by users.
	Status AsyncActorStatus `json:"status,omitempty"`
}

// AsyncActorSpec is the desired state of an actor, in one of two shapes
// (Shape): the nested 0.3 shape (transport, workload, timeout, sidecar,
// scaling) or the flat shape of upstream Asya 0.5+ and 1.x (actor, image,
// handler, ...). An object that mixes them is refused.
// +kubebuilder:validation:XValidation:rule="!(has(self.workload) || has(self.timeout)) || !(has(self.actor) || has(self.image) || has(self.handler) || has(self.imagePullPolicy) || has(self.pythonExecutable) || has(self.replicas) || has(self.env) || has(self.resources) || has(self.nodeSelector) || has(self.tolerations) || has(self.volumes) || has(self.volumeMounts) || has(self.initContainers) || has(self.sidecars) || has(self.resiliency) || has(self.tracing) || has(self.secretRefs) || has(self.stateProxy) || has(self.flavors) || has(self.compositionRef) || has(self.compositionRevisionRef) || has(self.compositionRevisionSelector) || has(self.compositionSelector) || has(self.compositionUpdatePolicy) || has(self.compositeDeletePolicy) || has(self.resourceRef) || has(self.writeConnectionSecretToRef) || has(self.publishConnectionDetailsTo))",message="mixes two shapes: workload and timeout belong to the nested 0.3 shape, actor, image, handler, env, resources, replicas, pythonExecutable, imagePullPolicy, nodeSelector, tolerations, volumes, volumeMounts, initContainers, sidecars, resiliency, tracing, secretRefs, stateProxy, flavors and the Crossplane claim fields (compositionRef, compositionSelector, ...) to the flat shape; use one"
// +kubebuilder:validation:XValidation:rule="has(self.actor) || has(self.image) || has(self.handler) || (has(self.transport) && has(self.workload))",message="spec.transport and spec.workload are required in the nested 0.3 shape"
// +kubebuilder:validation:XValidation:rule="!(has(self.actor) || has(self.image) || has(self.handler)) || (has(self.actor) && has(self.image) && has(self.handler))",message="spec.actor, spec.image and spec.handler are required in the flat shape"
// +kubebuilder:validation:XValidation:rule="!has(self.scaling) || !(has(self.workload) || has(self.timeout)) || !(has(self.scaling.minReplicaCount) || has(self.scaling.maxReplicaCount) || has(self.scaling.additionalTriggers))",message="scaling.minReplicaCount, maxReplicaCount and additionalTriggers belong to the flat shape; the 0.3 shape has minReplicas, maxReplicas and advanced.triggers"
// +kubebuilder:validation:XValidation:rule="!has(self.scaling) || !has(self.actor) || !(has(self.scaling.minReplicas) || has(self.scaling.maxReplicas) || (has(self.scaling.advanced) && has(self.scaling.advanced.triggers)))",message="scaling.minReplicas, maxReplicas and advanced.triggers belong to the 0.3 shape; the flat shape has minReplicaCount, maxReplicaCount and additionalTriggers"
type AsyncActorSpec struct {
	// Transport names a transport in asya-sync's service configuration
	// (for example rabbitmq or sqs). In the 0.3 shape it is required and
	// the actor's queue asya-<name> is created there; in the flat shape it
	// is optional (upstream 0.5's field) and defaults to the transport of
	// the claim's Crossplane composition (compositionRef asyncactor-<type>
	// or compositionSelector asya.sh/transport), else the service's
	// transport for flat actors; naming another transport than the
	// composition's is refused. A name that is unknown or disabled sets
	// status TransportError and creates nothing. Changing it moves the actor
	// to a new queue on the other transport: the old queue and its messages
	// stay where they are, and the pods roll with the new connection
	// settings.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Transport string `json:"transport,omitempty"`

	// Sidecar configures the asya-sidecar container injected into every pod.
	// +optional
	Sidecar SidecarSpec `json:"sidecar,omitempty"`
	// Timeout holds the per-message and shutdown timeouts (0.3 shape).
	// +optional
	Timeout TimeoutSpec `json:"timeout,omitempty"`
	// Scaling configures KEDA autoscaling on the queue's depth. In the 0.3
	// shape it is off unless enabled; in the flat shape it is on unless
	// enabled is false.
	// +optional
	Scaling ScalingSpec `json:"scaling,omitempty"`

	// Workload describes the pods: kind, replicas and the pod template.
	// Required in the 0.3 shape.
	// +optional
	Workload WorkloadSpec `json:"workload,omitempty"`

	CurrentSpec `json:",inline"`
	ClaimFields `json:",inline"`

	// AsyaGeneration is the Asya generation the spec is written for, as its
	// shape says (ShapeOf), set when the spec is decoded; never serialized,
	// and unrelated to metadata.generation.
	AsyaGeneration Generation `json:"-"`
}

// SidecarSpec configures the injected asya-sidecar container, which pulls
// messages from the actor's queue, hands them to the runtime and routes the
// results.
type SidecarSpec struct {
	// Image of the sidecar: a reference (0.3 and 0.5), or in the flat
	// shape also {repository, tag, pullPolicy} (1.x). Empty means the
	// service configuration's sidecar image for the actor's shape; so do,
	// in the flat shape, the values upstream's XRDs default it to
	// (ghcr.io/deliveryhero/asya-sidecar:latest, or that repository
	// without a tag), which upstream never ran. Changing it rolls the pods.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Image SidecarImage `json:"image,omitempty"`
	// ImagePullPolicy of the sidecar: Always, IfNotPresent or Never.
	// Default IfNotPresent. Changing it rolls the pods.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// Resources of the sidecar container (requests and limits). Default
	// none. Changing them rolls the pods.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Env is added to the sidecar's environment after the generated ASYA_*
	// variables; an entry replaces a generated one of the same name (for
	// example ASYA_LOG_LEVEL). Default none. Changing it rolls the pods.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// SecurityContext replaces, as a whole, the sidecar's securityContext
	// from the service configuration (sidecarSecurityContext), whose default
	// passes the Pod Security "restricted" profile: no privilege escalation,
	// all capabilities dropped, non-root user 1000, seccomp RuntimeDefault.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// TimeoutSpec holds the actor's timeouts, in seconds.
type TimeoutSpec struct {
	// Processing is how many seconds one message may take in the runtime
	// before the sidecar gives up on it (sidecar ASYA_RUNTIME_TIMEOUT). On
	// SQS it also sets the queue's visibility timeout to twice this value
	// unless the transport configures one. Default 300, at least 1. Changing
	// it rolls the pods (and updates the SQS queue in place).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=300
	// +optional
	Processing int32 `json:"processing,omitempty"`
	// GracefulShutdown is how many seconds a stopping pod gets to finish the
	// message in hand (the pod's terminationGracePeriodSeconds). Default 30,
	// at least 0. Changing it rolls the pods.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=30
	// +optional
	GracefulShutdown *int64 `json:"gracefulShutdown,omitempty"`
}

// ScalingSpec configures KEDA autoscaling on queue depth.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type ScalingSpec struct {
	// Enabled turns KEDA autoscaling on: asya-sync creates a ScaledObject
	// and leaves the workload's replicas to KEDA's HPA. Default false in
	// the 0.3 shape (the workload runs spec.workload.replicas), true in the
	// flat shape. Turning it off deletes the
	// ScaledObject and sets replicas back to spec.workload.replicas; on a
	// cluster without KEDA it sets status ScalingError.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// MinReplicas is the fewest replicas KEDA keeps; 0 lets an idle actor
	// scale to zero (status Napping). Default 0, at least 0, at most
	// maxReplicas. Takes effect at KEDA's next poll, without a restart.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the most replicas KEDA scales to. Default 50 (flat
	// shape: maxReplicaCount, default 10), at least
	// 1 and at least minReplicas. Takes effect at KEDA's next poll.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// PollingInterval is how many seconds KEDA waits between two looks at
	// the queue. Default 10 (flat shape 30), at least 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	PollingInterval int32 `json:"pollingInterval,omitempty"`
	// CooldownPeriod is how many seconds after the queue was last seen
	// non-empty KEDA waits before scaling to zero; it only matters with
	// minReplicas 0. Default 60 (flat shape 300), at least 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CooldownPeriod *int32 `json:"cooldownPeriod,omitempty"`
	// QueueLength is the target number of waiting messages per replica:
	// KEDA aims for ceil(queued / queueLength) replicas. Default 5, at
	// least 1. Lower values scale out sooner. Takes effect at KEDA's next
	// poll, without a restart.
	// +kubebuilder:validation:Minimum=1
	// +optional
	QueueLength int32 `json:"queueLength,omitempty"`
	// Advanced passes KEDA scaling modifiers through unchanged. Default
	// none.
	// +optional
	Advanced *AdvancedScaling `json:"advanced,omitempty"`

	// MinReplicaCount is minReplicas of the flat shape. Default 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
	// MaxReplicaCount is maxReplicas of the flat shape. Default 10.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
	// AdditionalTriggers are more KEDA triggers after the queue's, in the
	// flat shape (advanced.triggers of the 0.3 shape).
	// +optional
	AdditionalTriggers []Trigger `json:"additionalTriggers,omitempty"`
}

// AdvancedScaling maps onto KEDA's scalingModifiers and
// restoreToOriginalReplicaCount; see KEDA's ScaledObject documentation.
// KEDA, not asya-sync, validates the expressions: a rejected one shows as
// status ScalingError.
type AdvancedScaling struct {
	// Formula combines the triggers' metrics into one (KEDA
	// scalingModifiers.formula). Default none.
	// +optional
	Formula string `json:"formula,omitempty"`
	// Target is the formula's target value (KEDA scalingModifiers.target).
	// Default none.
	// +optional
	Target string `json:"target,omitempty"`
	// ActivationTarget is the formula value above which the actor scales
	// from zero (KEDA scalingModifiers.activationTarget). Default none.
	// +optional
	ActivationTarget string `json:"activationTarget,omitempty"`
	// MetricType of the formula's metric: AverageValue, Value or
	// Utilization. Default KEDA's (AverageValue).
	// +kubebuilder:validation:Enum=AverageValue;Value;Utilization
	// +optional
	MetricType string `json:"metricType,omitempty"`
	// RestoreToOriginalReplicaCount makes KEDA put the workload back to
	// its replica count from before scaling when the ScaledObject is
	// deleted (scaling turned off or actor deleted). Default false.
	// +optional
	RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
	// Triggers are more KEDA triggers beside the queue's (cron, cpu,
	// prometheus, ...), added to the ScaledObject as written: KEDA scales
	// on the highest of them, or on the formula, which names them by their
	// name (the queue's trigger is named queue). KEDA's verdict on them is
	// the ScalingReady condition. Default none.
	// +optional
	Triggers []Trigger `json:"triggers,omitempty"`
}

// Trigger is one KEDA trigger (a ScaledObject's spec.triggers item).
type Trigger struct {
	// Type is the KEDA scaler, e.g. cron, cpu, prometheus. Required.
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// Name names the trigger for the formula; "queue" is the queue's.
	// +optional
	Name string `json:"name,omitempty"`
	// Metadata configures the scaler, as KEDA documents it for the type.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
	// AuthenticationRef names a TriggerAuthentication in the actor's
	// namespace; a ClusterTriggerAuthentication is refused.
	// +optional
	AuthenticationRef *TriggerAuthenticationRef `json:"authenticationRef,omitempty"`
	// MetricType of the trigger's metric: AverageValue, Value or
	// Utilization (cpu and memory). Default KEDA's.
	// +kubebuilder:validation:Enum=AverageValue;Value;Utilization
	// +optional
	MetricType string `json:"metricType,omitempty"`
	// UseCachedMetrics lets KEDA answer the HPA from its last poll.
	// +optional
	UseCachedMetrics bool `json:"useCachedMetrics,omitempty"`
}

// TriggerAuthenticationRef names the credentials of a trigger.
type TriggerAuthenticationRef struct {
	// Name of a TriggerAuthentication in the actor's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Kind is TriggerAuthentication, the default; ClusterTriggerAuthentication
	// is refused.
	// +optional
	Kind string `json:"kind,omitempty"`
}

// Workload kinds.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// WorkloadSpec describes the actor's pods.
type WorkloadSpec struct {
	// Kind of the workload: Deployment or StatefulSet. Default Deployment.
	// Changing it replaces the workload: the old one and its pods are
	// deleted and a new one of the other kind is created (a full restart,
	// not a rolling one); the queue and its messages are kept.
	// +kubebuilder:validation:Enum=Deployment;StatefulSet
	// +kubebuilder:default=Deployment
	// +optional
	Kind string `json:"kind,omitempty"`
	// Replicas is the number of pods when scaling is disabled; ignored
	// while scaling.enabled is true (KEDA decides). Default 1, at least 0;
	// 0 stops the actor while its queue keeps collecting messages.
	// Changing it scales without a restart.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PythonExecutable is the interpreter that runs the runtime script in
	// the asya-runtime container (its command becomes
	// [pythonExecutable, /opt/asya/asya_runtime.py]). Default python3.
	// Changing it rolls the pods.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:default=python3
	// +optional
	PythonExecutable string `json:"pythonExecutable,omitempty"`

	// Template is the pod template: the user's containers, one of them
	// named asya-runtime, plus anything else a core/v1 pod allows.
	// Required. Changing it rolls the pods.
	Template PodTemplate `json:"template"`

	// VolumeClaimTemplates are the StatefulSet's claims, core/v1
	// PersistentVolumeClaims (see kubectl explain
	// statefulset.spec.volumeClaimTemplates): each pod gets one volume of
	// each, to mount by the claim's name. StatefulSet only. The API server
	// does not allow changing them on an existing StatefulSet.
	// +optional
	VolumeClaimTemplates []runtime.RawExtension `json:"volumeClaimTemplates,omitempty"`
}

// ClaimTemplates decodes VolumeClaimTemplates, whose items the CRD leaves
// schemaless as it does the pod template: the API server validates them as
// part of the StatefulSet.
func (w WorkloadSpec) ClaimTemplates() ([]corev1.PersistentVolumeClaim, error) {
	out := make([]corev1.PersistentVolumeClaim, len(w.VolumeClaimTemplates))
	for i, raw := range w.VolumeClaimTemplates {
		if err := json.Unmarshal(raw.Raw, &out[i]); err != nil {
			return nil, fmt.Errorf("spec.workload.volumeClaimTemplates[%d]: %w", i, err)
		}
	}
	return out, nil
}

// PodTemplate is the user's pod template. Its schema is left open so that
// the CRD stays small; the API server validates the pods it becomes.
type PodTemplate struct {
	// Metadata holds the pods' labels and annotations.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Metadata PodTemplateMetadata `json:"metadata,omitempty"`
	// Spec is a core/v1 PodSpec (see kubectl explain pod.spec). It must have
	// exactly one container named asya-runtime, without a command, and no
	// container named asya-sidecar.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Spec corev1.PodSpec `json:"spec"`
}

// PodTemplateMetadata is what a pod template's metadata may carry.
type PodTemplateMetadata struct {
	// Labels of the pods; asya-sync adds app, asya.sh/asya and
	// asya.sh/workload.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the pods; asya-sync adds asya.sh/runtime-hash.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AsyncActorStatus is the observed state, computed by the sync hook.
type AsyncActorStatus struct {
	// ObservedGeneration is the metadata.generation this status was
	// computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions TransportReady, WorkloadReady, (with scaling)
	// ScalingReady, and Ready, True when all of them are; a false one's
	// reason and message say exactly what is wrong.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Status is the one-word summary kubectl shows, the first that applies
	// of: Terminating, TransportError, ImagePullError, RuntimeError,
	// SidecarError, PendingResources, VolumeError, ConfigError,
	// WorkloadError, Creating, ScalingError, Napping, ScalingUp,
	// ScalingDown, Updating, Degraded, Running.
	// +optional
	Status string `json:"status,omitempty"`
	// Replicas is the number of ready pods (kubectl's Running column).
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of ready pods.
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
	// TotalReplicas is the number of pods, ready or not.
	// +optional
	TotalReplicas *int32 `json:"totalReplicas,omitempty"`
	// PendingReplicas is the number of pods starting up and not failing.
	// +optional
	PendingReplicas *int32 `json:"pendingReplicas,omitempty"`
	// FailingPods is the number of pods in a failure state (image pull,
	// crash loop, unschedulable, mount or config errors).
	// +optional
	FailingPods *int32 `json:"failingPods,omitempty"`
	// DesiredReplicas is the HPA's desired count when scaling, else
	// spec.workload.replicas.
	// +optional
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
	// ReadyReplicasSummary is "ready/total".
	// +optional
	ReadyReplicasSummary string `json:"readyReplicasSummary,omitempty"`
	// ReplicasSummary is "replicas/desiredReplicas", as the Asya operator
	// writes it.
	// +optional
	ReplicasSummary string `json:"replicasSummary,omitempty"`
	// ReadySummary is "ready/total" of the conditions TransportReady,
	// WorkloadReady and (with scaling) ScalingReady, as the Asya operator
	// writes it.
	// +optional
	ReadySummary string `json:"readySummary,omitempty"`
	// TransportStatus is Ready when the queue was ensured on the broker,
	// else NotReady.
	// +kubebuilder:validation:Enum=Ready;NotReady
	// +optional
	TransportStatus string `json:"transportStatus,omitempty"`
	// ScalingMode is KEDA when scaling is enabled, else Manual.
	// +kubebuilder:validation:Enum=KEDA;Manual
	// +optional
	ScalingMode string `json:"scalingMode,omitempty"`
	// WorkloadRef names the actor's Deployment or StatefulSet.
	// +optional
	WorkloadRef *WorkloadReference `json:"workloadRef,omitempty"`
	// ScaledObjectRef names the actor's KEDA ScaledObject, when scaling.
	// +optional
	ScaledObjectRef *NamespacedName `json:"scaledObjectRef,omitempty"`
	// LastScaleTime is when KEDA's HPA last changed the replica count.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// LastScaleDirection is up or down: the direction of the last scaling.
	// +kubebuilder:validation:Enum=up;down
	// +optional
	LastScaleDirection string `json:"lastScaleDirection,omitempty"`
	// QueuedMessages is the number of messages waiting in the queue, when
	// the broker reported it.
	// +optional
	QueuedMessages *int64 `json:"queuedMessages,omitempty"`
	// ProcessingMessages is the number of messages delivered and not yet
	// acknowledged, when the broker reported it.
	// +optional
	ProcessingMessages *int64 `json:"processingMessages,omitempty"`
	// MinReplicas is the fewest replicas KEDA scales the actor to, as the
	// spec says with its shape's default: spec.scaling.minReplicas (0.3)
	// or minReplicaCount (flat). kubectl's Min column, whose one path
	// serves both shapes.
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the most replicas KEDA scales the actor to, as the
	// spec says with its shape's default: spec.scaling.maxReplicas (0.3)
	// or maxReplicaCount (flat). kubectl's Max column.
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// WorkloadKind is the kind of the actor's workload, Deployment or
	// StatefulSet: spec.workload.kind (0.3), Deployment (flat). kubectl's
	// Workload column.
	// +optional
	WorkloadKind string `json:"workloadKind,omitempty"`
	// Unroutable says where the messages go that the exchange of the
	// actor's namespace routes to no queue (a route naming no actor, or an
	// actor since deleted): set for flat actors on RabbitMQ, whose sidecars
	// and gateway publish to that exchange without mandatory.
	// +optional
	Unroutable *UnroutableStatus `json:"unroutable,omitempty"`

	// The fields upstream's flat AsyncActor reports, set for flat actors
	// only, for the tools that read them.
	FlatStatus `json:",inline"`
}

// UnroutableStatus is where a namespace's unroutable messages are kept.
type UnroutableStatus struct {
	// Queue holds them, asya-<namespace>.unroutable; empty when they are
	// not caught.
	// +optional
	Queue string `json:"queue,omitempty"`
	// Messages is how many it holds, when the broker reported it.
	// +optional
	Messages *int64 `json:"messages,omitempty"`
	// Message says why they are not caught, or may not be.
	// +optional
	Message string `json:"message,omitempty"`
}

// FlatStatus is the status upstream Asya's Crossplane compositions write.
type FlatStatus struct {
	// Phase is Creating, Ready or Napping (scaled to zero).
	// +kubebuilder:validation:Enum=Creating;Ready;Napping
	// +optional
	Phase string `json:"phase,omitempty"`
	// QueueIdentifier identifies the queue: its ARN on SQS, else its
	// name, asya-<namespace>-<actor>.
	// +optional
	QueueIdentifier string `json:"queueIdentifier,omitempty"`
	// QueueURL is the queue's URL, where the transport has one (SQS).
	// +optional
	QueueURL string `json:"queueUrl,omitempty"`
	// Infrastructure says what is ready: the queue, KEDA, the workload.
	// +optional
	Infrastructure *Infrastructure `json:"infrastructure,omitempty"`
}

// Infrastructure is the readiness of what a flat actor is made of.
type Infrastructure struct {
	// +optional
	Queue *Readiness `json:"queue,omitempty"`
	// +optional
	KEDA *Readiness `json:"keda,omitempty"`
	// +optional
	Workload *WorkloadReadiness `json:"workload,omitempty"`
}

// Readiness is one part's readiness and why.
type Readiness struct {
	Ready bool `json:"ready"`
	// +optional
	Message string `json:"message,omitempty"`
}

// WorkloadReadiness is the workload's readiness and replica counts.
type WorkloadReadiness struct {
	Ready bool `json:"ready"`
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
}

// WorkloadReference points at the actor's Deployment or StatefulSet.
type WorkloadReference struct {
	// APIVersion of the workload (apps/v1).
	APIVersion string `json:"apiVersion"`
	// Kind of the workload: Deployment or StatefulSet.
	Kind string `json:"kind"`
	// Name of the workload (the actor's name).
	Name string `json:"name"`
	// Namespace of the workload (the actor's namespace).
	Namespace string `json:"namespace"`
}

// NamespacedName points at an object in a namespace.
type NamespacedName struct {
	// Name of the object.
	Name string `json:"name"`
	// Namespace of the object.
	Namespace string `json:"namespace"`
}
