package sync

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/asya-sh/asya-sync/api/hook"
)

// podSecurity holds the API server's own Pod Security checks, so that what
// the hook predicts and what admission decides are the same rules with the
// same messages.
var podSecurity = func() psapolicy.Evaluator {
	e, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("pod security checks: %v", err))
	}
	return e
}()

// privileged is what the API server enforces on a namespace without
// Pod Security labels, unless its admission configuration says otherwise.
var privileged = psaapi.Policy{Enforce: psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()}}

// podSecurityProblems says why the enforced Pod Security level of the
// actor's namespace would refuse the actor's pods. What asya-sync adds
// passes "restricted", so what fails is the user's template or the
// sidecar securityContext the actor or the service configuration chose.
func podSecurityProblems(ns *corev1.Namespace, tmpl corev1.PodTemplateSpec) []string {
	// Labels that do not parse are enforced as restricted:latest, as the API server does.
	policy, _ := psaapi.PolicyToEvaluate(ns.Labels, privileged)
	result := psapolicy.AggregateCheckResults(podSecurity.EvaluatePod(policy.Enforce, &tmpl.ObjectMeta, &tmpl.Spec))
	if result.Allowed {
		return nil
	}
	return []string{fmt.Sprintf("spec.workload.template: namespace %q would refuse the pods: violates PodSecurity %q: %s",
		ns.Name, policy.Enforce.String(), result.ForbiddenDetail())}
}

// checkPodSecurity adds the namespace's Pod Security verdict on the pods
// the actor would get (a.template). Without the Namespace (not asked for,
// or not visible) nothing is said.
func (a *assessment) checkPodSecurity() {
	ns := hook.Get(a.req.Related.Namespaces, a.actor.Namespace)
	if ns == nil {
		return
	}
	a.problems = append(a.problems, podSecurityProblems(ns.Typed(), a.template)...)
}

// enforcesRestricted reports whether the actor's namespace enforces Pod
// Security "restricted". A flat spec has no field for the runtime
// container's securityContext, so there asya-sync gives it the one the
// level asks for (children.Input.HardenRuntime); elsewhere it sets none,
// as upstream does, since a root image would not start with it.
func (a *assessment) enforcesRestricted() bool {
	ns := hook.Get(a.req.Related.Namespaces, a.actor.Namespace)
	if ns == nil {
		return false
	}
	policy, _ := psaapi.PolicyToEvaluate(ns.Typed().Labels, privileged)
	return policy.Enforce.Level == psaapi.LevelRestricted
}
