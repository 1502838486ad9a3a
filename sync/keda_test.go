package sync

import (
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"github.com/asya-sh/asya-sync/children"
)

func TestScalingModifierProblems(t *testing.T) {
	for _, tc := range []struct {
		formula, target string
		want            string // a part of the only problem; "" for none
	}{
		{"", "", ""},
		{children.TriggerName + " / 2", "4", ""},
		{"q / 2", "4", "error validating formula in ScalingModifiers: unknown name q"},
		{children.TriggerName + " +", "4", "error validating formula in ScalingModifiers: unexpected token"},
		{children.TriggerName, "lots", "error validating target in ScalingModifiers"},
	} {
		so := &kedav1alpha1.ScaledObject{Spec: kedav1alpha1.ScaledObjectSpec{
			Triggers: []kedav1alpha1.ScaleTriggers{{Name: children.TriggerName, Type: "rabbitmq"}},
			Advanced: &kedav1alpha1.AdvancedConfig{ScalingModifiers: kedav1alpha1.ScalingModifiers{Formula: tc.formula, Target: tc.target}},
		}}
		got := scalingModifierProblems(so)
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
