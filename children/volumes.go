package children

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/transport"
)

// Volume names the service adds to every pod.
const (
	volumeSocket  = "socket-dir"
	volumeTmp     = "tmp"
	volumeRuntime = "asya-runtime"
	// volumeTransport holds what the transport's sidecar reads from files
	// (transport.SidecarFiles).
	volumeTransport = "asya-transport"
)

// ReservedVolumes may not be defined by the user: the runtime and the
// sidecar depend on what they hold. "tmp" is not reserved: a user's tmp
// volume (say, a bigger one) is used in place of ours.
var ReservedVolumes = []string{volumeSocket, volumeRuntime, volumeTransport, volumeStateSockets}

func (in Input) volumes() []corev1.Volume {
	volumes := []corev1.Volume{
		{Name: volumeSocket, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: volumeRuntime, VolumeSource: in.delivery().volume(in)},
	}
	if source, _ := in.transportFiles(); source != nil {
		volumes = append(volumes, corev1.Volume{Name: volumeTransport, VolumeSource: *source})
	}
	return append(volumes, in.stateSocketsVolume()...)
}

// transportFiles is the volume the transport's sidecar reads files from,
// and where it mounts it, if any.
func (in Input) transportFiles() (*corev1.VolumeSource, string) {
	if f, ok := in.Transport.(transport.SidecarFiles); ok {
		return f.SidecarFiles()
	}
	return nil, ""
}

// sidecarMounts are the sidecar's: the shared ones and the transport's.
func (in Input) sidecarMounts() []corev1.VolumeMount {
	mounts := sharedMounts()
	if source, dir := in.transportFiles(); source != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: volumeTransport, MountPath: dir, ReadOnly: true})
	}
	return mounts
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
