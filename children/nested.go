package children

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// nested renders what is particular to Asya 0.3 actors.
type nested struct{}

// runtimeEnv: the end actors' validation off, unless the user's
// container sets it.
func (nested) runtimeEnv(in Input, env []corev1.EnvVar) []corev1.EnvVar {
	if in.endsRoutes() {
		env = addEnv(env, validationOff)
	}
	return env
}

func (nested) script(r RuntimeService) asyaruntime.Script { return r.Script }
func (nested) sidecarImage(s Service) string              { return s.SidecarImage }

// hardensRuntime: never; the user writes the runtime container, and with
// it its securityContext.
func (nested) hardensRuntime(Input) bool { return false }

// actorLabels: none. The Asya operator gave a 0.3 actor's children only
// its own labels; pod labels are the template's
// (spec.workload.template.metadata.labels).
func (nested) actorLabels(Input) map[string]string { return nil }

// sidecarEnv is the environment the Asya sidecar 0.3 reads, before the
// user's.
func (nested) sidecarEnv(in Input) []corev1.EnvVar {
	env := []corev1.EnvVar{
		value("ASYA_LOG_LEVEL", "info"),
		value("ASYA_ACTOR_NAME", in.Actor.Name),
	}
	if gw, ok := in.gatewayEnv(); ok {
		env = append(env, gw)
	}
	env = append(env,
		value("ASYA_ACTOR_HAPPY_END", v1alpha1.HappyEnd),
		value("ASYA_ACTOR_ERROR_END", v1alpha1.ErrorEnd),
		value("ASYA_RUNTIME_TIMEOUT", fmt.Sprintf("%ds", in.Actor.Spec.Timeout.Processing)),
		value("ASYA_SOCKET_DIR", SocketDir),
		value("ASYA_TRANSPORT", in.Transport.Type()),
	)
	env = append(env, in.Transport.SidecarEnv(in.queue())...)
	if in.endsRoutes() {
		env = append(env, value("ASYA_IS_END_ACTOR", "true"))
	}
	return env
}
