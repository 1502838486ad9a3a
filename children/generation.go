package children

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// generation is what the children of one Asya generation have of their
// own: its runtime script and default sidecar, the sidecar's environment,
// what the runtime's adds, its hardening, and which of
// the actor's labels its children carry. Everything else (the workload,
// its hardening, the runtime's wiring, KEDA) is built alike for both, from
// the model a flat spec is written into.
type generation interface {
	// script is the generation's runtime script, and sidecarImage the
	// service's default sidecar for it.
	script(r RuntimeService) asyaruntime.Script
	sidecarImage(s Service) string
	// hardensRuntime: the runtime container gets a restricted
	// securityContext unless it has one.
	hardensRuntime(in Input) bool
	sidecarEnv(in Input) []corev1.EnvVar
	runtimeEnv(in Input, env []corev1.EnvVar) []corev1.EnvVar
	actorLabels(in Input) map[string]string
}

var generations = map[v1alpha1.Generation]generation{
	v1alpha1.Nested: nested{},
	v1alpha1.Flat:   flat{},
}

func (in Input) generation() generation { return generations[in.Actor.Spec.AsyaGeneration] }

// endsRoutes: the actor's sidecar runs in end mode and its runtime skips
// validation (v1alpha1.Ends).
func (in Input) endsRoutes() bool { return in.Service.Ends.EndsRoutes(in.Actor) }

var validationOff = corev1.EnvVar{Name: "ASYA_ENABLE_VALIDATION", Value: "false"}
