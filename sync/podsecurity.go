package sync

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
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
// The verdict is the API server's; where it points is named as the
// actor's spec is written (v1alpha1.AsyncActorSpec.FieldPath).
func podSecurityProblems(ns *corev1.Namespace, tmpl corev1.PodTemplateSpec, spec v1alpha1.AsyncActorSpec) []string {
	// Labels that do not parse are enforced as restricted:latest, as the API server does.
	policy, _ := psaapi.PolicyToEvaluate(ns.Labels, privileged)
	result := psapolicy.AggregateCheckResults(podSecurity.EvaluatePod(policy.Enforce, &tmpl.ObjectMeta, &tmpl.Spec))
	if result.Allowed {
		return nil
	}
	return []string{fmt.Sprintf("%s: namespace %q would refuse the pods: violates PodSecurity %q: %s",
		spec.FieldPath(podTemplate, refusedParts(policy.Enforce, tmpl)...), ns.Name, policy.Enforce.String(), result.ForbiddenDetail())}
}

// refusedParts lists the paths of the pod's parts that the level refuses
// each on its own, in a pod with only that part: every init container,
// container and volume so refused, or, when none is, the pod itself.
func refusedParts(level psaapi.LevelVersion, tmpl corev1.PodTemplateSpec) []string {
	bare := *tmpl.Spec.DeepCopy()
	bare.InitContainers, bare.Containers, bare.Volumes = nil, nil, nil
	var parts []string
	refuse := func(pod corev1.PodSpec, path string) {
		if !psapolicy.AggregateCheckResults(podSecurity.EvaluatePod(level, &tmpl.ObjectMeta, &pod)).Allowed {
			parts = append(parts, path)
		}
	}
	for _, c := range tmpl.Spec.InitContainers {
		alone := bare
		alone.InitContainers = []corev1.Container{c}
		refuse(alone, fmt.Sprintf("%s.initContainers[name=%s]", templatePath, c.Name))
	}
	for _, c := range tmpl.Spec.Containers {
		alone := bare
		alone.Containers = []corev1.Container{c}
		refuse(alone, fmt.Sprintf("%s.containers[name=%s]", templatePath, c.Name))
	}
	for _, v := range tmpl.Spec.Volumes {
		alone := bare
		alone.Volumes = []corev1.Volume{v}
		refuse(alone, fmt.Sprintf("%s.volumes[name=%s]", templatePath, v.Name))
	}
	if len(parts) == 0 {
		parts = append(parts, templatePath)
	}
	return parts
}

// checkPodSecurity adds the namespace's Pod Security verdict on the pods
// the actor would get (a.given.Template). Without the Namespace (not asked for,
// or not visible) nothing is said.
func (a *assessment) checkPodSecurity() {
	ns := hook.Get(a.req.Related.Namespaces, a.actor.Namespace)
	if ns == nil {
		return
	}
	a.problems = append(a.problems, podSecurityProblems(ns.Typed(), a.given.Template, a.actor.Spec)...)
}

// enforcesRestricted reports whether the actor's namespace enforces Pod
// Security "restricted". A flat spec has no field for the runtime
// container's securityContext, so there asya-sync gives it the one the
// level asks for (children.Decided.Restricted); elsewhere it sets none,
// as upstream does, since a root image would not start with it.
func (a *assessment) enforcesRestricted() bool {
	ns := hook.Get(a.req.Related.Namespaces, a.actor.Namespace)
	if ns == nil {
		return false
	}
	policy, _ := psaapi.PolicyToEvaluate(ns.Typed().Labels, privileged)
	return policy.Enforce.Level == psaapi.LevelRestricted
}
