package children

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// A state proxy (spec.stateProxy) is a connector container beside the
// runtime, serving one mount of the runtime's file I/O over a Unix socket
// in a volume the two share, as upstream's compositions render it.
const (
	volumeStateSockets = "state-sockets"
	// StateSocketDir holds each connector's socket, <name>.sock.
	StateSocketDir = SocketDir + "/state"
	// StateProxyPrefix starts each connector container's name.
	StateProxyPrefix = "asya-state-proxy-"
	// stateProxyMountsEnv tells the runtime each mount:
	// name:path:write=mode, separated by ';'.
	stateProxyMountsEnv = "ASYA_STATE_PROXY_MOUNTS"
	defaultWriteMode    = "buffered"
)

func (in Input) stateProxies() []v1alpha1.StateProxy { return in.Actor.Spec.StateProxy }

// stateProxyMounts is the runtime's ASYA_STATE_PROXY_MOUNTS.
func stateProxyMounts(proxies []v1alpha1.StateProxy) corev1.EnvVar {
	mounts := make([]string, len(proxies))
	for i, p := range proxies {
		mode := p.WriteMode
		if mode == "" {
			mode = defaultWriteMode
		}
		mounts[i] = p.Name + ":" + p.Mount.Path + ":write=" + mode
	}
	return value(stateProxyMountsEnv, strings.Join(mounts, ";"))
}

// wireStateProxies gives the runtime its mounts and the sockets' volume.
func (in Input) wireStateProxies(runtime *corev1.Container) {
	proxies := in.stateProxies()
	if len(proxies) == 0 {
		return
	}
	runtime.Env = setEnv(runtime.Env, stateProxyMounts(proxies))
	runtime.VolumeMounts = addMounts(runtime.VolumeMounts, []corev1.VolumeMount{stateSocketsMount()})
}

// connectors are the state proxies' containers. In a namespace that
// enforces "restricted" they get the context it asks for, as the flat
// runtime does: the spec has no field for theirs.
func (in Input) connectors() []corev1.Container {
	var out []corev1.Container
	for _, p := range in.stateProxies() {
		c := p.Connector
		env := []corev1.EnvVar{value("CONNECTOR_SOCKET", StateSocketDir+"/"+p.Name+".sock")}
		container := corev1.Container{
			Name:            StateProxyPrefix + p.Name,
			Image:           c.Image,
			ImagePullPolicy: c.ImagePullPolicy,
			Env:             append(env, c.Env...),
			VolumeMounts:    []corev1.VolumeMount{stateSocketsMount()},
		}
		if c.Resources != nil {
			container.Resources = *c.Resources.DeepCopy()
		}
		if in.Decided.Restricted {
			container.SecurityContext = restrictedContext()
		}
		out = append(out, container)
	}
	return out
}

// stateSocketsVolume is the sockets' volume, when there are state proxies.
func (in Input) stateSocketsVolume() []corev1.Volume {
	if len(in.stateProxies()) == 0 {
		return nil
	}
	return []corev1.Volume{{Name: volumeStateSockets, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
}

func stateSocketsMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: volumeStateSockets, MountPath: StateSocketDir}
}
