package sync

import (
	"regexp"
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

// firstLines joins an error's lines, leaving out what points into the
// formula as KEDA rewrote it (float(...)), not as the user wrote it: the
// excerpt and caret lines (" | ...") and the "(line:column)" position.
func firstLines(msg string) string {
	var kept []string
	for _, line := range strings.Split(msg, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			kept = append(kept, position.ReplaceAllString(strings.TrimSpace(line), ""))
		}
	}
	return strings.Join(kept, ": ")
}

var position = regexp.MustCompile(` \(\d+:\d+\)$`)
