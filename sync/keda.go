package sync

import (
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// scalingModifierProblems runs KEDA's own admission check of the
// scalingModifiers on the ScaledObject the actor would get (a formula
// names triggers, and the actor's only trigger is children.TriggerName),
// so that what KEDA's webhook would refuse is reported in status, in
// KEDA's words, instead of failing Metacontroller's apply.
func scalingModifierProblems(so *kedav1alpha1.ScaledObject) []string {
	if so.Spec.Advanced == nil || so.Spec.Advanced.ScalingModifiers.Formula == "" {
		return nil
	}
	// The check rewrites the formula it compiles.
	if _, err := kedav1alpha1.ValidateAndCompileScalingModifiers(so.DeepCopy()); err != nil {
		return []string{"spec.scaling.advanced: KEDA would refuse the ScaledObject: " + firstLines(err.Error())}
	}
	return nil
}

// firstLines joins an error's lines, leaving out the source excerpt and
// caret lines (" | ...") of an expression error.
func firstLines(msg string) string {
	var kept []string
	for _, line := range strings.Split(msg, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			kept = append(kept, strings.TrimSpace(line))
		}
	}
	return strings.Join(kept, ": ")
}
