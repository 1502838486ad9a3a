package sync

import (
	"regexp"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// kedaProblems runs KEDA's own admission checks of the triggers and the
// scalingModifiers on the ScaledObject the actor would get (unique trigger
// names, the queue's being children.TriggerName; a formula naming
// triggers), so that what KEDA's webhook would refuse is reported in
// status, in KEDA's words, instead of failing Metacontroller's apply.
func kedaProblems(spec v1alpha1.AsyncActorSpec, so *kedav1alpha1.ScaledObject) []string {
	const advanced, refused = "spec.scaling.advanced", ": KEDA would refuse the ScaledObject: "
	if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
		return []string{spec.FieldPath(advanced, advanced+".triggers") + refused + firstLines(err.Error())}
	}
	if so.Spec.Advanced == nil || so.Spec.Advanced.ScalingModifiers.Formula == "" {
		return nil
	}
	// The check rewrites the formula it compiles.
	if _, err := kedav1alpha1.ValidateAndCompileScalingModifiers(so.DeepCopy()); err != nil {
		return []string{spec.FieldPath(advanced) + refused + firstLines(err.Error())}
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
