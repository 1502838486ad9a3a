package v1alpha1

import (
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CurrentSpec holds the fields of the flat shape of upstream Asya 0.5+ and
// 1.x, whose AsyncActor is the same kind with the same fields as
// upstream's Crossplane claim, so that its manifests apply unchanged.
// Shape tells the two shapes apart; normalize turns a flat spec into the
// model every builder reads.
type CurrentSpec struct {
	// Actor is the actor's name on the queues: its queue is
	// asya-<namespace>-<actor>, and messages route to it by this name.
	// Required in the flat shape; a DNS label. It may differ from
	// metadata.name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	// +optional
	Actor string `json:"actor,omitempty"`
	// Flavors name EnvironmentConfigs (apiextensions.crossplane.io/v1beta1,
	// cluster-scoped) whose data, a partial spec, is merged into this one
	// in order, as upstream's flavor function merges it; the actor's own
	// fields win. A flavor that is missing or does not merge is named in
	// the status, and the running workload is kept.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=3
	// +optional
	Flavors []string `json:"flavors,omitempty"`
	// Image is the runtime container's image: Python with the handler's
	// module importable. Required in the flat shape.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Image string `json:"image,omitempty"`
	// ImagePullPolicy of the runtime container. Default IfNotPresent.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// Handler is module.function or module.Class.method (the runtime's
	// ASYA_HANDLER). Required in the flat shape.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Handler string `json:"handler,omitempty"`
	// PythonExecutable runs the runtime script. Default python3.
	// +kubebuilder:validation:MinLength=1
	// +optional
	PythonExecutable string `json:"pythonExecutable,omitempty"`
	// Replicas is the number of pods while scaling is disabled. Default 1.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Env is added to the runtime container's environment.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// Resources of the runtime container (core/v1 ResourceRequirements).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// NodeSelector of the pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the pods (core/v1 Tolerations).
	// +optional
	Tolerations []runtime.RawExtension `json:"tolerations,omitempty"`
	// Volumes of the pods (core/v1 Volumes).
	// +optional
	Volumes []runtime.RawExtension `json:"volumes,omitempty"`
	// VolumeMounts of the runtime container (core/v1 VolumeMounts).
	// +optional
	VolumeMounts []runtime.RawExtension `json:"volumeMounts,omitempty"`
	// InitContainers of the pods (core/v1 Containers); names must not start
	// with asya-.
	// +optional
	InitContainers []runtime.RawExtension `json:"initContainers,omitempty"`
	// Sidecars are more containers of the pods (core/v1 Containers), after
	// asya-sidecar; names must not start with asya-.
	// +optional
	Sidecars []runtime.RawExtension `json:"sidecars,omitempty"`
	// Resiliency is the sidecar's retry and timeout policy, in upstream
	// 0.5's form (retry, nonRetryableErrors) or 1.x's (policies, rules).
	// +optional
	Resiliency *Resiliency `json:"resiliency,omitempty"`
	// Tracing sends the sidecar's OpenTelemetry traces (1.x).
	// +optional
	Tracing *Tracing `json:"tracing,omitempty"`
	// SecretRefs put Secret keys into the runtime's environment.
	// +optional
	SecretRefs []SecretRef `json:"secretRefs,omitempty"`
	// StateProxy adds a connector container per entry, which serves the
	// runtime's file I/O under mount.path (ASYA_STATE_PROXY_MOUNTS) over a
	// socket in a volume the two share.
	// +optional
	StateProxy []StateProxy `json:"stateProxy,omitempty"`
}

// Resiliency is the sidecar's retry policy (ASYA_RESILIENCY_*).
type Resiliency struct {
	// ActorTimeout bounds one call of the handler (a Go duration, default
	// 5m): the sidecar's ASYA_RESILIENCY_ACTOR_TIMEOUT.
	// +optional
	ActorTimeout string `json:"actorTimeout,omitempty"`
	// Retry is upstream 0.5's retry policy.
	// +optional
	Retry *Retry `json:"retry,omitempty"`
	// NonRetryableErrors are error types never retried (0.5).
	// +optional
	NonRetryableErrors []string `json:"nonRetryableErrors,omitempty"`
	// Policies are named retry policies (1.x); "default" is the fallback.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Policies map[string]json.RawMessage `json:"policies,omitempty"`
	// Rules map error types to policies (1.x).
	// +optional
	Rules []ResiliencyRule `json:"rules,omitempty"`
}

// Retry is upstream 0.5's retry policy. Each field unset in a retry that
// is written defaults as upstream's XRD defaults it, at admission (the
// markers) and again in the hook (Retry.withDefaults); no retry written
// means no retries.
type Retry struct {
	// Policy is constant or exponential backoff. Default exponential.
	// +kubebuilder:validation:Enum=constant;exponential
	// +kubebuilder:default=exponential
	// +optional
	Policy string `json:"policy,omitempty"`
	// MaxAttempts bounds the attempts at a message (0 disables retries).
	// Default 3.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=3
	// +optional
	MaxAttempts *int32 `json:"maxAttempts,omitempty"`
	// InitialInterval is the first retry's delay (a Go duration). Default
	// 1s.
	// +kubebuilder:default="1s"
	// +optional
	InitialInterval string `json:"initialInterval,omitempty"`
	// MaxInterval caps the delay (a Go duration). Default 300s.
	// +kubebuilder:default="300s"
	// +optional
	MaxInterval string `json:"maxInterval,omitempty"`
	// BackoffCoefficient multiplies the delay after each attempt of an
	// exponential policy. Default 2.0.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=number
	// +kubebuilder:default=2.0
	// +optional
	BackoffCoefficient json.Number `json:"backoffCoefficient,omitempty"`
	// Jitter randomizes the delays. Default true.
	// +kubebuilder:default=true
	// +optional
	Jitter *bool `json:"jitter,omitempty"`
}

// ResiliencyPolicy is one of 1.x's named retry policies, the fields its
// sidecar reads (docs/design.md#retries). Spec.resiliency.policies keeps
// them as written, fields this type does not know included, so that the
// sidecar is given exactly what the user wrote; this type is how
// asya-sync reads them.
type ResiliencyPolicy struct {
	// MaxAttempts counts the first attempt; 1.x's sidecar takes 0 or none
	// as 1 (no retry).
	MaxAttempts *int32 `json:"maxAttempts,omitempty"`
	// Backoff is constant, linear or exponential (doubling).
	Backoff string `json:"backoff,omitempty"`
	// InitialDelay, MaxInterval and MaxDuration are Go durations; none is
	// zero: no delay, no cap, no limit.
	InitialDelay string   `json:"initialDelay,omitempty"`
	MaxInterval  string   `json:"maxInterval,omitempty"`
	MaxDuration  string   `json:"maxDuration,omitempty"`
	Jitter       bool     `json:"jitter,omitempty"`
	OnExhausted  []string `json:"onExhausted,omitempty"`
}

// Retries says whether the policy tries a failed message again.
func (p ResiliencyPolicy) Retries() bool { return p.MaxAttempts != nil && *p.MaxAttempts > 1 }

// DecodedPolicies reads spec.resiliency.policies, naming the first policy
// that does not decode (in name order, so the message does not change
// between calls).
func (r Resiliency) DecodedPolicies() (map[string]ResiliencyPolicy, error) {
	names := make([]string, 0, len(r.Policies))
	for name := range r.Policies {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]ResiliencyPolicy, len(names))
	for _, name := range names {
		var p ResiliencyPolicy
		if err := json.Unmarshal(r.Policies[name], &p); err != nil {
			return nil, fmt.Errorf("spec.resiliency.policies.%s: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}

// ResiliencyRule sends errors of the listed types to a named policy.
type ResiliencyRule struct {
	// +kubebuilder:validation:MinItems=1
	Errors []string `json:"errors"`
	// +kubebuilder:validation:MinLength=1
	Policy string `json:"policy"`
}

// Tracing configures the sidecar's OpenTelemetry exporter.
type Tracing struct {
	// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Protocol is OTEL_EXPORTER_OTLP_PROTOCOL (grpc or http/protobuf).
	// +optional
	Protocol string `json:"protocol,omitempty"`
}

// SecretRef puts keys of one Secret into the runtime's environment.
type SecretRef struct {
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
	// +kubebuilder:validation:MinItems=1
	Keys []SecretRefKey `json:"keys"`
}

// SecretRefKey is one key and the variable it becomes.
type SecretRefKey struct {
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
	// +kubebuilder:validation:MinLength=1
	EnvVar string `json:"envVar"`
}

// StateProxy is one state proxy container and its mount in the runtime.
type StateProxy struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	Name  string         `json:"name"`
	Mount StateProxyPath `json:"mount"`
	// +kubebuilder:validation:Enum=buffered;passthrough
	// +optional
	WriteMode string              `json:"writeMode,omitempty"`
	Connector StateProxyConnector `json:"connector"`
}

// StateProxyPath is where the runtime sees the state.
type StateProxyPath struct {
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path"`
}

// StateProxyConnector is the state proxy's container.
type StateProxyConnector struct {
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// SidecarImage is the sidecar's image: a reference, as the 0.3 and 0.5
// shapes write it, or {repository, tag, pullPolicy}, as 1.x does.
type SidecarImage struct {
	// Ref is the image reference; Repository and Tag make it when it is
	// written as an object.
	Ref        string
	Repository string            `json:"repository,omitempty"`
	Tag        string            `json:"tag,omitempty"`
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
}

// UnmarshalJSON accepts both forms.
func (i *SidecarImage) UnmarshalJSON(b []byte) error {
	*i = SidecarImage{}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &i.Ref)
	}
	var obj struct {
		Repository string            `json:"repository"`
		Tag        string            `json:"tag"`
		PullPolicy corev1.PullPolicy `json:"pullPolicy"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("sidecar.image: a reference or {repository, tag, pullPolicy}: %w", err)
	}
	i.Repository, i.Tag, i.PullPolicy = obj.Repository, obj.Tag, obj.PullPolicy
	return nil
}

// MarshalJSON writes the form it was read in.
func (i SidecarImage) MarshalJSON() ([]byte, error) {
	if i.Repository == "" && i.Tag == "" && i.PullPolicy == "" {
		return json.Marshal(i.Ref)
	}
	return json.Marshal(struct {
		Repository string            `json:"repository,omitempty"`
		Tag        string            `json:"tag,omitempty"`
		PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
	}{i.Repository, i.Tag, i.PullPolicy})
}

// Reference is the image to run: Ref, else repository:tag (repository
// alone without a tag), else "" (the service's default for the shape).
func (i SidecarImage) Reference() string {
	switch {
	case i.Ref != "" || i.Repository == "":
		return i.Ref
	case i.Tag != "":
		return i.Repository + ":" + i.Tag
	}
	return i.Repository
}

// The pod's lists a flat spec passes through, each a core/v1 type whose
// schema the CRD leaves open as the pod template's is: the API server
// validates them in the workload. A list that does not decode is a spec
// problem (Decoded).

// Decoded decodes the flat spec's open lists, naming the first that does
// not decode.
func (c CurrentSpec) Decoded() (DecodedLists, error) {
	var d DecodedLists
	for _, l := range []struct {
		path string
		raw  []runtime.RawExtension
		into any
	}{
		{"spec.tolerations", c.Tolerations, &d.Tolerations},
		{"spec.volumes", c.Volumes, &d.Volumes},
		{"spec.volumeMounts", c.VolumeMounts, &d.VolumeMounts},
		{"spec.initContainers", c.InitContainers, &d.InitContainers},
		{"spec.sidecars", c.Sidecars, &d.Sidecars},
	} {
		if err := decodeList(l.raw, l.into); err != nil {
			return d, fmt.Errorf("%s: %w", l.path, err)
		}
	}
	return d, nil
}

// DecodedLists are a flat spec's open lists, decoded.
type DecodedLists struct {
	Tolerations    []corev1.Toleration
	Volumes        []corev1.Volume
	VolumeMounts   []corev1.VolumeMount
	InitContainers []corev1.Container
	Sidecars       []corev1.Container
}

func decodeList(raw []runtime.RawExtension, into any) error {
	if len(raw) == 0 {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}
