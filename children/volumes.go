package children

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
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
		{Name: volumeRuntime, VolumeSource: in.delivery().volume(in)},
	}
}

// scriptMode makes the runtime script executable, whichever volume holds
// it.
const scriptMode int32 = 0o755

// sharedMounts are mounted in both the runtime and the sidecar.
func sharedMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: volumeSocket, MountPath: SocketDir},
		{Name: volumeTmp, MountPath: "/tmp"},
	}
}

// addVolumes appends ours, skipping any name the user already defined.
func addVolumes(user, ours []corev1.Volume) []corev1.Volume {
	return addMissing(user, ours, func(v corev1.Volume) string { return v.Name })
}

// addMounts appends ours, skipping any path the user already mounts: the
// API server rejects two mounts at one path.
func addMounts(user, ours []corev1.VolumeMount) []corev1.VolumeMount {
	return addMissing(user, ours, func(m corev1.VolumeMount) string { return m.MountPath })
}

// addMissing appends to a copy of user each of ours whose key no entry of
// user has: the user's entry wins.
func addMissing[T any](user, ours []T, key func(T) string) []T {
	out := append([]T(nil), user...)
	for _, o := range ours {
		if !slices.ContainsFunc(user, func(u T) bool { return key(u) == key(o) }) {
			out = append(out, o)
		}
	}
	return out
}
