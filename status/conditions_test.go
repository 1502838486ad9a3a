package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

func TestReadyCondition(t *testing.T) {
	ok := func(typ string) metav1.Condition { return metav1.Condition{Type: typ, Status: cTrue, Reason: "Fine"} }
	bad := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: cFalse, Reason: reason, Message: reason + " says why"}
	}
	for _, tc := range []struct {
		name   string
		conds  []metav1.Condition
		status metav1.ConditionStatus
		reason string
	}{
		{"all true", []metav1.Condition{ok(ConditionTransportReady), ok(ConditionWorkloadReady), ok(ConditionScalingReady)}, cTrue, "Ready"},
		{"no scaling", []metav1.Condition{ok(ConditionTransportReady), ok(ConditionWorkloadReady)}, cTrue, "Ready"},
		{"transport first", []metav1.Condition{bad(ConditionTransportReady, "BrokerUnavailable"), bad(ConditionWorkloadReady, "Creating")}, cFalse, "BrokerUnavailable"},
		{"workload before scaling", []metav1.Condition{ok(ConditionTransportReady), bad(ConditionScalingReady, "KEDANotInstalled"), bad(ConditionWorkloadReady, "InvalidSpec")}, cFalse, "InvalidSpec"},
		{"scaling", []metav1.Condition{ok(ConditionTransportReady), ok(ConditionWorkloadReady), bad(ConditionScalingReady, "ScaledObjectCheckFailed")}, cFalse, "ScaledObjectCheckFailed"},
		{"unknown is not ready", []metav1.Condition{ok(ConditionTransportReady), ok(ConditionWorkloadReady), {Type: ConditionScalingReady, Status: metav1.ConditionUnknown, Reason: "WaitingForKEDA", Message: "WaitingForKEDA says why"}}, cFalse, "WaitingForKEDA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readyCondition(tc.conds)
			if got.status != tc.status || got.reason != tc.reason {
				t.Errorf("Ready = %s %s, want %s %s", got.status, got.reason, tc.status, tc.reason)
			}
			if got.status == cFalse && got.message != tc.reason+" says why" {
				t.Errorf("message %q, want the failing condition's", got.message)
			}
		})
	}
}

func TestOperatorSummaries(t *testing.T) {
	three, five := int32(3), int32(5)
	cond := func(typ string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s}
	}
	for _, tc := range []struct {
		name                    string
		st                      v1alpha1.AsyncActorStatus
		wantReplicas, wantReady string
	}{
		{"scaling up, scaling not ready", v1alpha1.AsyncActorStatus{Replicas: &three, DesiredReplicas: &five, Conditions: []metav1.Condition{
			cond(ConditionTransportReady, cTrue), cond(ConditionWorkloadReady, cFalse), cond(ConditionScalingReady, cTrue), cond(ConditionReady, cFalse)}},
			"3/5", "2/3"},
		{"no desired count: the current one", v1alpha1.AsyncActorStatus{Replicas: &three, Conditions: []metav1.Condition{
			cond(ConditionTransportReady, cTrue), cond(ConditionWorkloadReady, cTrue), cond(ConditionReady, cTrue)}},
			"3/3", "2/2"},
		{"nothing observed", v1alpha1.AsyncActorStatus{}, "0/0", "0/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setOperatorSummaries(&tc.st)
			if tc.st.ReplicasSummary != tc.wantReplicas || tc.st.ReadySummary != tc.wantReady {
				t.Errorf("replicasSummary %q, readySummary %q; want %q, %q", tc.st.ReplicasSummary, tc.st.ReadySummary, tc.wantReplicas, tc.wantReady)
			}
		})
	}
}
