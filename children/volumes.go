package children

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Volume names the service adds to every pod.
const (
	volumeSocket  = "socket-dir"
	volumeTmp     = "tmp"
	volumeRuntime = "asya-runtime"
)

// ReservedVolumes may not be defined by the user: the runtime and the
// sidecar depend on what they hold. "tmp" is not reserved: a user's tmp
// volume (say, a bigger one) is used in place of ours.
var ReservedVolumes = []string{volumeSocket, volumeRuntime}

func (in Input) volumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: volumeSocket, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: volumeRuntime, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: RuntimeConfigMapName(in.Actor.Name)},
			DefaultMode:          ptr.To[int32](0o755),
		}}},
	}
}

// sharedMounts are mounted in both the runtime and the sidecar.
func sharedMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: volumeSocket, MountPath: SocketDir},
		{Name: volumeTmp, MountPath: "/tmp"},
	}
}

// addVolumes appends ours, skipping any name the user already defined.
func addVolumes(user, ours []corev1.Volume) []corev1.Volume {
	out := append([]corev1.Volume(nil), user...)
	for _, v := range ours {
		if !hasVolume(user, v.Name) {
			out = append(out, v)
		}
	}
	return out
}

func hasVolume(vols []corev1.Volume, name string) bool {
	for _, v := range vols {
		if v.Name == name {
			return true
		}
	}
	return false
}

// addMounts appends ours, skipping any path the user already mounts: the
// API server rejects two mounts at one path.
func addMounts(user, ours []corev1.VolumeMount) []corev1.VolumeMount {
	out := append([]corev1.VolumeMount(nil), user...)
	for _, m := range ours {
		if !mountsPath(user, m.MountPath) {
			out = append(out, m)
		}
	}
	return out
}

func mountsPath(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}
