package children

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// sidecar is the injected asya-sidecar container.
func (in Input) sidecar() corev1.Container {
	spec := in.Actor.Spec.Sidecar
	env := in.generation().sidecarEnv(in)
	for _, e := range spec.Env {
		env = setEnv(env, e)
	}
	return corev1.Container{
		Name:            v1alpha1.SidecarContainer,
		Image:           in.sidecarImage(),
		ImagePullPolicy: spec.ImagePullPolicy,
		Resources:       *spec.Resources.DeepCopy(),
		Env:             env,
		VolumeMounts:    in.sidecarMounts(),
		SecurityContext: in.sidecarSecurityContext(),
	}
}

// sidecarSecurityContext is the actor's own, else the service's. An empty
// one sets nothing.
func (in Input) sidecarSecurityContext() *corev1.SecurityContext {
	sc := in.Actor.Spec.Sidecar.SecurityContext
	if sc == nil {
		sc = in.Service.SidecarSecurityContext
	}
	if sc == nil || *sc == (corev1.SecurityContext{}) {
		return nil
	}
	return sc.DeepCopy()
}

func (in Input) sidecarImage() string {
	switch ref := in.Actor.Spec.Sidecar.Image.Reference(); {
	case ref != "":
		return ref
	case in.generation().sidecarImage(in.Service) != "":
		return in.generation().sidecarImage(in.Service)
	}
	return v1alpha1.DefaultSidecarImage
}

// gatewayEnv is the sidecar's ASYA_GATEWAY_URL: the service's gatewayURL,
// else the runtime container's own ASYA_GATEWAY_URL (as the Asya operator
// does, and its multi-hop actors rely on), else none.
func (in Input) gatewayEnv() (corev1.EnvVar, bool) {
	if in.Service.GatewayURL != "" {
		return value(gatewayURLEnv, in.Service.GatewayURL), true
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
