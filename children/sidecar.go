package children

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// sidecar is the injected asya-sidecar container.
func (in Input) sidecar() corev1.Container {
	spec := in.Actor.Spec.Sidecar
	env := in.sidecarEnv()
	for _, e := range spec.Env {
		env = setEnv(env, e)
	}
	return corev1.Container{
		Name:            v1alpha1.SidecarContainer,
		Image:           in.sidecarImage(),
		ImagePullPolicy: spec.ImagePullPolicy,
		Resources:       *spec.Resources.DeepCopy(),
		Env:             env,
		VolumeMounts:    sharedMounts(),
		SecurityContext: in.sidecarSecurityContext(),
	}
}

// sidecarSecurityContext is the actor's own, else the service's. An empty
// one sets nothing.
func (in Input) sidecarSecurityContext() *corev1.SecurityContext {
	sc := in.Actor.Spec.Sidecar.SecurityContext
	if sc == nil {
		sc = in.SidecarSecurityContext
	}
	if sc == nil || *sc == (corev1.SecurityContext{}) {
		return nil
	}
	return sc.DeepCopy()
}

func (in Input) sidecarImage() string {
	switch {
	case in.Actor.Spec.Sidecar.Image != "":
		return in.Actor.Spec.Sidecar.Image
	case in.SidecarImage != "":
		return in.SidecarImage
	}
	return v1alpha1.DefaultSidecarImage
}

// sidecarEnv is the environment the Asya sidecar reads, before the user's.
func (in Input) sidecarEnv() []corev1.EnvVar {
	env := []corev1.EnvVar{
		value("ASYA_LOG_LEVEL", "info"),
		value("ASYA_ACTOR_NAME", in.Actor.Name),
	}
	if in.GatewayURL != "" {
		env = append(env, value("ASYA_GATEWAY_URL", in.GatewayURL))
	}
	env = append(env,
		value("ASYA_ACTOR_HAPPY_END", HappyEnd),
		value("ASYA_ACTOR_ERROR_END", ErrorEnd),
		value("ASYA_RUNTIME_TIMEOUT", fmt.Sprintf("%ds", in.Actor.Spec.Timeout.Processing)),
		value("ASYA_SOCKET_DIR", SocketDir),
		value("ASYA_TRANSPORT", in.Transport.Type()),
	)
	env = append(env, in.Transport.SidecarEnv(in.queue())...)
	if in.isEndActor() {
		env = append(env, value("ASYA_IS_END_ACTOR", "true"))
	}
	return env
}
