package children

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestEnvMerging(t *testing.T) {
	user := []corev1.EnvVar{{Name: "A", Value: "user"}, {Name: "B", Value: "user"}}
	tests := []struct {
		name string
		fn   func([]corev1.EnvVar, corev1.EnvVar) []corev1.EnvVar
		add  corev1.EnvVar
		want []corev1.EnvVar
	}{
		{"set replaces in place", setEnv, corev1.EnvVar{Name: "A", Value: "ours"},
			[]corev1.EnvVar{{Name: "A", Value: "ours"}, {Name: "B", Value: "user"}}},
		{"set appends a new name", setEnv, corev1.EnvVar{Name: "C", Value: "ours"},
			[]corev1.EnvVar{{Name: "A", Value: "user"}, {Name: "B", Value: "user"}, {Name: "C", Value: "ours"}}},
		{"add keeps the existing entry", addEnv, corev1.EnvVar{Name: "B", Value: "ours"},
			[]corev1.EnvVar{{Name: "A", Value: "user"}, {Name: "B", Value: "user"}}},
		{"add appends a new name", addEnv, corev1.EnvVar{Name: "C", Value: "ours"},
			[]corev1.EnvVar{{Name: "A", Value: "user"}, {Name: "B", Value: "user"}, {Name: "C", Value: "ours"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]corev1.EnvVar(nil), user...)
			if diff := cmp.Diff(tt.want, tt.fn(in, tt.add)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(user, in); diff != "" {
				t.Errorf("input was modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestMountsAndVolumesSkipWhatTheUserHas(t *testing.T) {
	userMounts := []corev1.VolumeMount{{Name: "scratch", MountPath: "/tmp"}}
	got := addMounts(userMounts, sharedMounts())
	want := []corev1.VolumeMount{{Name: "scratch", MountPath: "/tmp"}, {Name: volumeSocket, MountPath: SocketDir}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	userVols := []corev1.Volume{{Name: volumeTmp}}
	ours := []corev1.Volume{{Name: volumeSocket}, {Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if diff := cmp.Diff([]corev1.Volume{{Name: volumeTmp}, {Name: volumeSocket}}, addVolumes(userVols, ours)); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
}
