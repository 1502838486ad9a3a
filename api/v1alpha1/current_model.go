package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Upstream's defaults for flat actors (its XRD and compositions), where
// they differ from the nested shape's.
const (
	FlatDefaultMaxReplicas     = 10
	FlatDefaultPollingInterval = 30
	FlatDefaultCooldownPeriod  = 300
	// FlatDefaultActorTimeout is the sidecar's own default for
	// ASYA_RESILIENCY_ACTOR_TIMEOUT.
	FlatDefaultActorTimeout = 5 * time.Minute
)

// The defaults of resiliency.retry's fields, upstream's XRD's, which the
// CRD's markers on Retry give at admission too.
const (
	DefaultRetryPolicy          = "exponential"
	DefaultRetryMaxAttempts     = 3
	DefaultRetryInitialInterval = "1s"
	DefaultRetryMaxInterval     = "300s"
	// DefaultRetryBackoffCoefficient is 2.0 written as the API server
	// writes the CRD's default 2.0, so that an actor the hook defaults
	// renders as one defaulted at admission, to the byte, and its pods do
	// not roll when the CRD is upgraded under it.
	DefaultRetryBackoffCoefficient = "2"
	DefaultRetryJitter             = true
)

// LabelFlatActor carries a flat actor's spec.actor on its pods, as
// upstream's compositions label them.
const LabelFlatActor = "asya.sh/actor"

// flatModel writes a flat spec into the model every builder reads: the pod
// template from image, handler, env and the rest, scaling with upstream's
// flat defaults, and the per-message timeout from resiliency.actorTimeout.
// The flat fields stay, with the defaults of upstream's XRD, for what only
// the flat generation renders (the sidecar's environment).
func (spec AsyncActorSpec) flatModel() AsyncActorSpec {
	spec.CurrentSpec = spec.CurrentSpec.withDefaults()
	c := spec.CurrentSpec
	lists, _ := c.Decoded() // a list that does not decode is a problem validation reports
	runtime := corev1.Container{
		Name: RuntimeContainer, Image: c.Image, ImagePullPolicy: c.ImagePullPolicy,
		Env: c.runtimeEnv(), VolumeMounts: lists.VolumeMounts,
	}
	if c.Resources != nil {
		runtime.Resources = *c.Resources
	}
	pod := corev1.PodSpec{
		InitContainers: lists.InitContainers,
		Containers:     append([]corev1.Container{runtime}, lists.Sidecars...),
		Volumes:        lists.Volumes,
		NodeSelector:   c.NodeSelector,
		Tolerations:    lists.Tolerations,
	}
	spec.Workload = WorkloadSpec{Kind: KindDeployment, Replicas: c.Replicas, PythonExecutable: c.PythonExecutable,
		Template: PodTemplate{Spec: pod, Metadata: PodTemplateMetadata{Labels: map[string]string{LabelFlatActor: c.Actor}}}}
	spec.Timeout = TimeoutSpec{Processing: int32(c.ActorTimeout() / time.Second)}
	s := &spec.Scaling
	s.Enabled = orDefault(s.Enabled, true)
	s.MinReplicas, s.MaxReplicas = orDefault(s.MinReplicaCount, DefaultMinReplicas), orDefault(s.MaxReplicaCount, FlatDefaultMaxReplicas)
	s.CooldownPeriod = orDefault(s.CooldownPeriod, FlatDefaultCooldownPeriod)
	if s.PollingInterval == 0 {
		s.PollingInterval = FlatDefaultPollingInterval
	}
	if len(s.AdditionalTriggers) > 0 {
		if s.Advanced == nil {
			s.Advanced = &AdvancedScaling{}
		}
		s.Advanced.Triggers = s.AdditionalTriggers
	}
	if spec.Sidecar.ImagePullPolicy == "" {
		spec.Sidecar.ImagePullPolicy = spec.Sidecar.Image.PullPolicy
	}
	if spec.Sidecar.Image.upstreamDefault() {
		spec.Sidecar.Image = SidecarImage{}
	}
	return spec
}

// withDefaults gives the flat fields the defaults upstream's XRD gives
// them at admission, for the actors that reach the hook without them:
// admitted by a CRD from before these defaults, or rendered from a file.
// The CRD cannot default imagePullPolicy itself: a spec field it defaults
// is in every object, and would make a 0.3 actor a mix of both shapes.
func (c CurrentSpec) withDefaults() CurrentSpec {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if r := c.Resiliency; r != nil && r.Retry != nil {
		copied := *r // the spec's pointers are shared with the caller's actor
		copied.Retry = r.Retry.withDefaults()
		c.Resiliency = &copied
	}
	return c
}

// withDefaults is a copy of the retry policy with each unset field
// defaulted, as OpenAPI defaults apply: field by field, once the retry is
// written at all.
func (r *Retry) withDefaults() *Retry {
	d := *r
	if d.Policy == "" {
		d.Policy = DefaultRetryPolicy
	}
	d.MaxAttempts = orDefault(d.MaxAttempts, DefaultRetryMaxAttempts)
	if d.InitialInterval == "" {
		d.InitialInterval = DefaultRetryInitialInterval
	}
	if d.MaxInterval == "" {
		d.MaxInterval = DefaultRetryMaxInterval
	}
	if d.BackoffCoefficient == "" {
		d.BackoffCoefficient = DefaultRetryBackoffCoefficient
	}
	d.Jitter = orDefault(d.Jitter, DefaultRetryJitter)
	return &d
}

// upstreamSidecarRepository is upstream's sidecar repository.
const upstreamSidecarRepository = "ghcr.io/deliveryhero/asya-sidecar"

// upstreamDefault reports whether a flat actor's sidecar image is what
// upstream's XRDs write into every claim that names none: 0.5's
// ghcr.io/deliveryhero/asya-sidecar:latest, 1.x's {repository:
// ghcr.io/deliveryhero/asya-sidecar} without a tag. Upstream's
// compositions never read spec.sidecar.image: their pods ran the
// installation's sidecar, whatever the claim said. So a claim exported
// from upstream keeps its sidecar only if asya-sync takes that value for
// "none" (the service's flatActors.sidecarImage), not for a moving :latest
// tag; that is also what a user who wrote the same value got upstream.
// Any other value is a choice, and is run.
func (i SidecarImage) upstreamDefault() bool {
	return i.Ref == upstreamSidecarRepository+":latest" ||
		i.Ref == "" && i.Repository == upstreamSidecarRepository && i.Tag == ""
}

// ActorTimeout is resiliency.actorTimeout, or the sidecar's default when
// it is unset or not a positive duration (validation reports the latter).
func (c CurrentSpec) ActorTimeout() time.Duration {
	if c.Resiliency != nil && c.Resiliency.ActorTimeout != "" {
		if d, err := time.ParseDuration(c.Resiliency.ActorTimeout); err == nil && d >= time.Second {
			return d
		}
	}
	return FlatDefaultActorTimeout
}

// runtimeEnv is the runtime container's environment, in upstream's order:
// the handler, the user's variables, the Secret keys. Validation off for
// the actors that end routes comes after the handler, from the builders,
// which know the configured sink and sump (Ends).
func (c CurrentSpec) runtimeEnv() []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "ASYA_HANDLER", Value: c.Handler}}
	env = append(env, c.Env...)
	for _, ref := range c.SecretRefs {
		for _, k := range ref.Keys {
			env = append(env, corev1.EnvVar{Name: k.EnvVar, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: ref.SecretName}, Key: k.Key}}})
		}
	}
	return env
}
