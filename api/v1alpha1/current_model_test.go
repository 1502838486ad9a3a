package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestFlatDefaults: a flat spec gets the defaults of upstream's XRD, as the
// hook sees it; a nested spec gets none of them, which would make it look
// like a mix of both shapes.
func TestFlatDefaults(t *testing.T) {
	flat := func(c CurrentSpec) AsyncActorSpec {
		c.Actor, c.Image, c.Handler = "echo", "python:3.12", "echo.handle"
		return AsyncActorSpec{Generation: Flat, CurrentSpec: c}
	}
	tests := []struct {
		name string
		spec AsyncActorSpec
		// runtime is the runtime container's pull policy in the model.
		runtime, want corev1.PullPolicy
	}{
		{"flat, unset", flat(CurrentSpec{}), corev1.PullIfNotPresent, corev1.PullIfNotPresent},
		{"flat, the user's kept", flat(CurrentSpec{ImagePullPolicy: corev1.PullAlways}), corev1.PullAlways, corev1.PullAlways},
		{"nested: no flat field set", AsyncActorSpec{Workload: WorkloadSpec{Template: PodTemplate{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: RuntimeContainer, Image: "python:3.12"}}}}}}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.spec.WithDefaults()
			if got.ImagePullPolicy != tc.want {
				t.Errorf("spec.imagePullPolicy = %q, want %q", got.ImagePullPolicy, tc.want)
			}
			if diff := cmp.Diff(tc.runtime, got.Workload.Template.Spec.Containers[0].ImagePullPolicy); diff != "" {
				t.Errorf("runtime container's imagePullPolicy (-want +got):\n%s", diff)
			}
		})
	}
}
