package sync

import (
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
)

func TestKEDAProblems(t *testing.T) {
	for _, tc := range []struct {
		formula, target string
		extra           []kedav1alpha1.ScaleTriggers // beside the queue's
		want            string                       // a part of the only problem; "" for none
	}{
		{"", "", nil, ""},
		{children.TriggerName + " / 2", "4", nil, ""},
		{"q / 2", "4", nil, "error validating formula in ScalingModifiers: unknown name q"},
		{children.TriggerName + " +", "4", nil, "error validating formula in ScalingModifiers: unexpected token"},
		{children.TriggerName, "lots", nil, "error validating target in ScalingModifiers"},
		{"", "", []kedav1alpha1.ScaleTriggers{{Type: "cron", Name: "office-hours"}}, ""},
		{"", "", []kedav1alpha1.ScaleTriggers{{Type: "cron", Name: children.TriggerName}}, `triggerName "queue" is defined multiple times`},
		{"", "", []kedav1alpha1.ScaleTriggers{{Type: "cpu", UseCachedMetrics: true}}, `"useCachedMetrics" is not supported for "cpu"`},
	} {
		so := &kedav1alpha1.ScaledObject{Spec: kedav1alpha1.ScaledObjectSpec{
			Triggers: append([]kedav1alpha1.ScaleTriggers{{Name: children.TriggerName, Type: "rabbitmq"}}, tc.extra...),
			Advanced: &kedav1alpha1.AdvancedConfig{ScalingModifiers: kedav1alpha1.ScalingModifiers{Formula: tc.formula, Target: tc.target}},
		}}
		got := kedaProblems(v1alpha1.AsyncActorSpec{}, so)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("formula %q target %q: %v, want no problem", tc.formula, tc.target, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("formula %q target %q: %v, want one problem saying %q", tc.formula, tc.target, got, tc.want)
		case strings.Contains(strings.Join(got, ""), "\n"):
			t.Errorf("formula %q: a problem spans lines: %q", tc.formula, got)
		}
		if so.Spec.Advanced.ScalingModifiers.Formula != tc.formula {
			t.Errorf("the check rewrote the formula to %q", so.Spec.Advanced.ScalingModifiers.Formula)
		}
	}
}
