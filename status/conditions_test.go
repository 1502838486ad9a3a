package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
