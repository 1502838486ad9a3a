package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// TestFlatStatus: what upstream's tools read of a flat actor, as its
// compositions write it: KEDA ready when scaling is off, the queue named
// as the transport identifies it; a 0.3 actor gets none of it.
func TestFlatStatus(t *testing.T) {
	const arn = "arn:aws:sqs:eu-west-1:123456789012:asya-default-echo"
	flat := func(scaling bool) Input {
		in := input()
		a := &v1alpha1.AsyncActor{TypeMeta: in.Actor.TypeMeta, ObjectMeta: in.Actor.ObjectMeta}
		a.Spec.AsyaGeneration = v1alpha1.Flat
		a.Spec.Actor, a.Spec.Image, a.Spec.Handler = "echo", "ghcr.io/acme/echo:1.2.0", "echo.handle"
		a.Spec.Scaling.Enabled = ptr(scaling)
		a.Spec = a.Spec.WithDefaults()
		in.Actor, in.ScalingActive = a, scaling
		in.QueueIdentifier, in.QueueURL = arn, "https://sqs.eu-west-1.amazonaws.com/123456789012/asya-default-echo"
		return in
	}
	keda := func(in Input) Input { in.KEDAMissing = true; return in }
	running := func(in Input) Input { in.Workload = deployment(2, 2); return in }

	tests := []struct {
		name  string
		in    Input
		phase string
		// keda is infrastructure.keda; nil: ScalingReady's status and
		// message.
		keda *v1alpha1.Readiness
	}{
		{"scaling off, running: KEDA has nothing to do", running(flat(false)), PhaseReady,
			&v1alpha1.Readiness{Ready: true, Message: "scaling is off: KEDA scales nothing"}},
		{"scaling off, creating", flat(false), PhaseCreating,
			&v1alpha1.Readiness{Ready: true, Message: "scaling is off: KEDA scales nothing"}},
		{"scaling on, no KEDA in the cluster: ScalingReady's", keda(running(flat(true))), PhaseCreating, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(tc.in).Status
			got := st.FlatStatus
			want := tc.keda
			if want == nil {
				c := meta.FindStatusCondition(st.Conditions, ConditionScalingReady)
				want = &v1alpha1.Readiness{Ready: c.Status == metav1.ConditionTrue, Message: c.Message}
				if want.Ready {
					t.Fatalf("ScalingReady is True without KEDA")
				}
			}
			if got.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", got.Phase, tc.phase)
			}
			if diff := cmp.Diff(want, got.Infrastructure.KEDA); diff != "" {
				t.Errorf("infrastructure.keda (-want +got):\n%s", diff)
			}
			if got.QueueIdentifier != arn || got.QueueURL != tc.in.QueueURL {
				t.Errorf("queueIdentifier %q, queueUrl %q: want the input's", got.QueueIdentifier, got.QueueURL)
			}
		})
	}
	nested := input()
	nested.QueueIdentifier = "asya-echo"
	if got := Compute(nested).Status.FlatStatus; !cmp.Equal(got, v1alpha1.FlatStatus{}) {
		t.Errorf("a 0.3 actor's status has flat fields: %+v", got)
	}
}
