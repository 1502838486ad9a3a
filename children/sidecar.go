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

// gatewayEnv is the sidecar's ASYA_GATEWAY_URL: the service's gatewayURL,
// else the runtime container's own ASYA_GATEWAY_URL (as the Asya operator
// does, and its multi-hop actors rely on), else none.
func (in Input) gatewayEnv() (corev1.EnvVar, bool) {
	if in.GatewayURL != "" {
		return value(gatewayURLEnv, in.GatewayURL), true
	}
	for _, c := range in.Actor.Spec.Workload.Template.Spec.Containers {
		if c.Name != v1alpha1.RuntimeContainer {
			continue
		}
		for _, e := range c.Env {
			if e.Name == gatewayURLEnv {
				return e, true
			}
		}
	}
	return corev1.EnvVar{}, false
}

const gatewayURLEnv = "ASYA_GATEWAY_URL"

// sidecarEnv is the environment the Asya sidecar reads, before the user's.
func (in Input) sidecarEnv() []corev1.EnvVar {
	env := []corev1.EnvVar{
		value("ASYA_LOG_LEVEL", "info"),
		value("ASYA_ACTOR_NAME", in.Actor.Name),
	}
	if gw, ok := in.gatewayEnv(); ok {
		env = append(env, gw)
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
