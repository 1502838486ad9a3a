package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=asya;asyas;asyncactor
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Failing",type=integer,JSONPath=`.status.failingPods`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.totalReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.spec.scaling.minReplicas`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.spec.scaling.maxReplicas`
// +kubebuilder:printcolumn:name="Last-Scale",type=date,JSONPath=`.status.lastScaleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workload.kind`,priority=1
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.status.transportStatus`,priority=1
// +kubebuilder:printcolumn:name="Scaling",type=string,JSONPath=`.status.scalingMode`,priority=1
// +kubebuilder:printcolumn:name="Queued",type=integer,JSONPath=`.status.queuedMessages`,priority=1
// +kubebuilder:printcolumn:name="Processing",type=integer,JSONPath=`.status.processingMessages`,priority=1
// +kubebuilder:printcolumn:name="Direction",type=string,JSONPath=`.status.lastScaleDirection`,priority=1

// AsyncActor is a queue-fed worker: a user container running Python handler
// code next to an injected sidecar, scaled by KEDA on queue depth.
type AsyncActor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AsyncActorSpec   `json:"spec"`
	Status AsyncActorStatus `json:"status,omitempty"`
}

// AsyncActorSpec is the desired state of an actor.
type AsyncActorSpec struct {
	// Transport names a transport in the service configuration.
	// +kubebuilder:validation:MinLength=1
	Transport string `json:"transport"`

	// +kubebuilder:default={}
	// +optional
	Sidecar SidecarSpec `json:"sidecar,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Timeout TimeoutSpec `json:"timeout,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Scaling ScalingSpec `json:"scaling,omitempty"`

	Workload WorkloadSpec `json:"workload"`
}

// SidecarSpec configures the injected asya-sidecar container.
type SidecarSpec struct {
	// Image of the sidecar; defaults to the service's sidecarImage.
	// +optional
	Image string `json:"image,omitempty"`
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Env is added to the sidecar; an entry replaces a generated one of the same name.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
}

// TimeoutSpec holds the actor's timeouts, in seconds.
type TimeoutSpec struct {
	// Processing is the time one message may take.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=300
	// +optional
	Processing int32 `json:"processing,omitempty"`
	// GracefulShutdown becomes the pod's terminationGracePeriodSeconds.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=30
	// +optional
	GracefulShutdown *int64 `json:"gracefulShutdown,omitempty"`
}

// ScalingSpec configures KEDA autoscaling on queue depth.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type ScalingSpec struct {
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=50
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=10
	// +optional
	PollingInterval int32 `json:"pollingInterval,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=60
	// +optional
	CooldownPeriod *int32 `json:"cooldownPeriod,omitempty"`
	// QueueLength is the target number of messages per replica.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=5
	// +optional
	QueueLength int32 `json:"queueLength,omitempty"`
	// +optional
	Advanced *AdvancedScaling `json:"advanced,omitempty"`
}

// AdvancedScaling maps onto KEDA's scalingModifiers.
type AdvancedScaling struct {
	// +optional
	Formula string `json:"formula,omitempty"`
	// +optional
	Target string `json:"target,omitempty"`
	// +optional
	ActivationTarget string `json:"activationTarget,omitempty"`
	// +kubebuilder:validation:Enum=AverageValue;Value;Utilization
	// +optional
	MetricType string `json:"metricType,omitempty"`
	// +optional
	RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
}

// Workload kinds.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// WorkloadSpec describes the actor's pods.
type WorkloadSpec struct {
	// +kubebuilder:validation:Enum=Deployment;StatefulSet
	// +kubebuilder:default=Deployment
	// +optional
	Kind string `json:"kind,omitempty"`
	// Replicas is used when scaling is disabled.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PythonExecutable runs the runtime script in the asya-runtime container.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:default=python3
	// +optional
	PythonExecutable string `json:"pythonExecutable,omitempty"`

	Template PodTemplate `json:"template"`
}

// PodTemplate is the user's pod template. Its schema is left open so that
// the CRD stays small; the API server validates the pods it becomes.
type PodTemplate struct {
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Metadata PodTemplateMetadata `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Spec corev1.PodSpec `json:"spec"`
}

// PodTemplateMetadata is what a pod template's metadata may carry.
type PodTemplateMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AsyncActorStatus is the observed state, computed by the sync hook.
type AsyncActorStatus struct {
	// ObservedGeneration is written by Metacontroller.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Status is the one-word summary shown by kubectl.
	// +optional
	Status string `json:"status,omitempty"`
	// Replicas is the number of ready pods.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
	// +optional
	TotalReplicas *int32 `json:"totalReplicas,omitempty"`
	// +optional
	PendingReplicas *int32 `json:"pendingReplicas,omitempty"`
	// +optional
	FailingPods *int32 `json:"failingPods,omitempty"`
	// DesiredReplicas is the HPA's when scaling, else the spec's.
	// +optional
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
	// +optional
	ReadyReplicasSummary string `json:"readyReplicasSummary,omitempty"`
	// +kubebuilder:validation:Enum=Ready;NotReady
	// +optional
	TransportStatus string `json:"transportStatus,omitempty"`
	// +kubebuilder:validation:Enum=KEDA;Manual
	// +optional
	ScalingMode string `json:"scalingMode,omitempty"`
	// +optional
	WorkloadRef *WorkloadReference `json:"workloadRef,omitempty"`
	// +optional
	ScaledObjectRef *NamespacedName `json:"scaledObjectRef,omitempty"`
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// +kubebuilder:validation:Enum=up;down
	// +optional
	LastScaleDirection string `json:"lastScaleDirection,omitempty"`
	// +optional
	QueuedMessages *int64 `json:"queuedMessages,omitempty"`
	// +optional
	ProcessingMessages *int64 `json:"processingMessages,omitempty"`
}

// WorkloadReference points at the actor's Deployment or StatefulSet.
type WorkloadReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
}

// NamespacedName points at an object in a namespace.
type NamespacedName struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}
