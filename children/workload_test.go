package children

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestWithDefaultSeccomp(t *testing.T) {
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	unconfined := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	tests := []struct {
		name string
		sc   *corev1.PodSecurityContext
		os   *corev1.PodOS
		want *corev1.PodSecurityContext
	}{
		{"none set", nil, nil, &corev1.PodSecurityContext{SeccompProfile: runtimeDefault}},
		{"the user's other settings kept, root included", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), FSGroup: ptr.To[int64](100)}, nil,
			&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), FSGroup: ptr.To[int64](100), SeccompProfile: runtimeDefault}},
		{"the user's profile wins", &corev1.PodSecurityContext{SeccompProfile: unconfined}, nil, &corev1.PodSecurityContext{SeccompProfile: unconfined}},
		{"windows pods have none", nil, &corev1.PodOS{Name: corev1.Windows}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, withDefaultSeccomp(tt.sc, tt.os)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
