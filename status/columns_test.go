package status

import (
	"testing"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// TestColumnFields: the fields kubectl's Min, Max and Workload columns
// read say the spec's bounds and kind with its shape's defaults, for both
// shapes.
func TestColumnFields(t *testing.T) {
	nested := func(edit func(*v1alpha1.AsyncActorSpec)) *v1alpha1.AsyncActor {
		a := newActor()
		spec := v1alpha1.AsyncActorSpec{Transport: "rabbitmq", Workload: v1alpha1.WorkloadSpec{Template: a.Spec.Workload.Template}}
		if edit != nil {
			edit(&spec)
		}
		a.Spec = spec.WithDefaults()
		return a
	}
	flat := func(edit func(*v1alpha1.AsyncActorSpec)) *v1alpha1.AsyncActor {
		a := newActor()
		spec := v1alpha1.AsyncActorSpec{AsyaGeneration: v1alpha1.Flat}
		spec.Actor, spec.Image, spec.Handler = "echo", "ghcr.io/acme/echo:1.2.0", "echo.handle"
		if edit != nil {
			edit(&spec)
		}
		a.Spec = spec.WithDefaults()
		return a
	}
	tests := []struct {
		name     string
		actor    *v1alpha1.AsyncActor
		min, max int32
		kind     string
	}{
		{"0.3, defaults", nested(nil), 0, 50, "Deployment"},
		{"0.3, set", nested(func(s *v1alpha1.AsyncActorSpec) {
			s.Scaling.MinReplicas, s.Scaling.MaxReplicas = ptr(int32(1)), ptr(int32(20))
			s.Workload.Kind = v1alpha1.KindStatefulSet
		}), 1, 20, "StatefulSet"},
		{"flat, defaults", flat(nil), 0, 10, "Deployment"},
		{"flat, set", flat(func(s *v1alpha1.AsyncActorSpec) {
			s.Scaling.MinReplicaCount, s.Scaling.MaxReplicaCount = ptr(int32(2)), ptr(int32(4))
		}), 2, 4, "Deployment"},
		{"flat, scaling off: the bounds it would have", flat(func(s *v1alpha1.AsyncActorSpec) {
			s.Scaling.Enabled, s.Scaling.MaxReplicaCount = ptr(false), ptr(int32(4))
		}), 0, 4, "Deployment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := input()
			in.Actor = tc.actor
			st := Compute(in).Status
			if st.MinReplicas == nil || st.MaxReplicas == nil || *st.MinReplicas != tc.min || *st.MaxReplicas != tc.max || st.WorkloadKind != tc.kind {
				t.Errorf("minReplicas %v, maxReplicas %v, workloadKind %q; want %d, %d, %q",
					deref(st.MinReplicas), deref(st.MaxReplicas), st.WorkloadKind, tc.min, tc.max, tc.kind)
			}
		})
	}
}

func deref(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}
