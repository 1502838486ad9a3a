package v1alpha1

import corev1 "k8s.io/api/core/v1"

// The defaults of docs/design.md#defaults, mirrored by the +kubebuilder:default markers so that
// an actor reads the same whether or not the API server defaulted it.
const (
	// DefaultSidecarImage is used when neither the actor nor the service
	// configuration names one: the last published sidecar that speaks
	// runtime/asya_runtime.py's socket protocol.
	DefaultSidecarImage     = "ghcr.io/deliveryhero/asya-sidecar:0.3.10"
	DefaultProcessing       = 300
	DefaultGracefulShutdown = 30
	DefaultMinReplicas      = 0
	DefaultMaxReplicas      = 50
	DefaultPollingInterval  = 10
	DefaultCooldownPeriod   = 60
	DefaultQueueLength      = 5
	DefaultReplicas         = 1
	DefaultPythonExecutable = "python3"
)

// WithDefaults returns a copy of spec with every unset field defaulted. The
// sidecar image is left alone: its default comes from the service config.
func (spec AsyncActorSpec) WithDefaults() AsyncActorSpec {
	if spec.AsyaGeneration == Flat {
		spec = spec.flatModel()
	}
	if spec.Sidecar.ImagePullPolicy == "" {
		spec.Sidecar.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if spec.Timeout.Processing == 0 {
		spec.Timeout.Processing = DefaultProcessing
	}
	spec.Timeout.GracefulShutdown = orDefault(spec.Timeout.GracefulShutdown, DefaultGracefulShutdown)
	spec.Scaling.MinReplicas = orDefault(spec.Scaling.MinReplicas, DefaultMinReplicas)
	spec.Scaling.MaxReplicas = orDefault(spec.Scaling.MaxReplicas, DefaultMaxReplicas)
	spec.Scaling.CooldownPeriod = orDefault(spec.Scaling.CooldownPeriod, DefaultCooldownPeriod)
	if spec.Scaling.PollingInterval == 0 {
		spec.Scaling.PollingInterval = DefaultPollingInterval
	}
	if spec.Scaling.QueueLength == 0 {
		spec.Scaling.QueueLength = DefaultQueueLength
	}
	if spec.Workload.Kind == "" {
		spec.Workload.Kind = KindDeployment
	}
	spec.Workload.Replicas = orDefault(spec.Workload.Replicas, DefaultReplicas)
	if spec.Workload.PythonExecutable == "" {
		spec.Workload.PythonExecutable = DefaultPythonExecutable
	}
	return spec
}

// On reports whether KEDA autoscaling is enabled.
func (s ScalingSpec) On() bool { return s.Enabled != nil && *s.Enabled }

func orDefault[T int32 | int64 | bool](v *T, def T) *T {
	if v != nil {
		return v
	}
	return &def
}

// HPAName is the HorizontalPodAutoscaler KEDA creates for the actor's
// ScaledObject: KEDA's convention.
func HPAName(actor string) string { return "keda-hpa-" + actor }

// Container names of the actor's pods (docs/design.md#children): the user's container
// that runs the handler, and the sidecar asya-sync injects.
const (
	RuntimeContainer = "asya-runtime"
	SidecarContainer = "asya-sidecar"
)
