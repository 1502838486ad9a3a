package sync

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	"github.com/asya-sh/asya-sync/transport"
)

// The pod template in the model every builder reads, and its spec: the
// paths the shared checks name, which v1alpha1.AsyncActorSpec.FieldPath
// turns into the fields of the spec as written.
const (
	podTemplate  = "spec.workload.template"
	templatePath = podTemplate + ".spec"
)

// validate lists what is wrong with a defaulted spec, each problem naming
// the container or field. The CRD rejects most of the range and enum
// errors at admission; they are checked again for actors that reach the
// hook without that CRD (render, older installs).
func validate(actor *v1alpha1.AsyncActor, t config.Transport) []string {
	return generationOf(actor).validate(actor.Name, actor.Spec, t)
}

// validate: the pod template is the user's, and named as the spec does.
func (nested) validate(name string, spec v1alpha1.AsyncActorSpec, t config.Transport) []string {
	problems := validateName(name)
	if only, ok := t.Kind.(transport.ScopedOnly); ok {
		problems = append(problems, fmt.Sprintf("spec.transport: %q serves only actors of the current shape (spec.actor): %s", t.Name, only.ScopedOnly()))
	}
	problems = append(problems, validateContainers(spec.Workload.Template.Spec)...)
	problems = append(problems, reservedVolumes(templatePath+".volumes", spec.Workload.Template.Spec.Volumes)...)
	problems = append(problems, validateRanges(spec)...)
	problems = append(problems, validateAdvanced(spec)...)
	problems = append(problems, validateClaims(spec.Workload)...)
	if t.Kind.PodRole() != "" && spec.Workload.Template.Spec.ServiceAccountName != "" {
		problems = append(problems, fmt.Sprintf(
			"%s.serviceAccountName: must be empty with transport %q: pods run as the IRSA ServiceAccount %s",
			templatePath, t.Name, children.ServiceAccountName(name)))
	}
	return problems
}

// validateName refuses a nested actor whose queue, asya-<name>, would be
// the queue that catches a namespace's unroutable messages: a nested
// actor's name may hold '.', which keeps those queues apart from every
// other actor's (transport.UnroutableSuffix).
func validateName(name string) []string {
	if ns, ok := strings.CutSuffix(name, transport.UnroutableSuffix); ok {
		return []string{fmt.Sprintf("metadata.name: %q: names ending in %s are reserved: queue asya-%s catches the unroutable messages of namespace %s",
			name, transport.UnroutableSuffix, name, ns)}
	}
	return nil
}

func validateContainers(pod corev1.PodSpec) []string {
	var problems []string
	runtimes := 0
	for i, c := range pod.Containers {
		switch c.Name {
		case v1alpha1.RuntimeContainer:
			runtimes++
			if len(c.Command) > 0 {
				problems = append(problems, fmt.Sprintf(
					"%s.containers[%d] (asya-runtime): command must not be set: asya-sync runs the runtime script", templatePath, i))
			}
		case v1alpha1.SidecarContainer:
			problems = append(problems, fmt.Sprintf(
				"%s.containers[%d]: the name asya-sidecar is reserved for the injected sidecar", templatePath, i))
		}
	}
	for i, c := range pod.InitContainers {
		switch c.Name {
		case v1alpha1.SidecarContainer:
			problems = append(problems, fmt.Sprintf(
				"%s.initContainers[%d]: the name asya-sidecar is reserved for the injected sidecar", templatePath, i))
		case children.RuntimeWriterContainer:
			problems = append(problems, fmt.Sprintf(
				"%s.initContainers[%d]: the name %s is reserved for the init container that writes the runtime script", templatePath, i, c.Name))
		}
	}
	switch {
	case runtimes == 0:
		problems = append(problems, fmt.Sprintf("%s.containers: exactly one container must be named asya-runtime, found none", templatePath))
	case runtimes > 1:
		problems = append(problems, fmt.Sprintf("%s.containers: exactly one container must be named asya-runtime, found %d", templatePath, runtimes))
	}
	return problems
}

// reservedVolumes refuses the volume names the runtime and the sidecar
// depend on; path is where the list is written.
func reservedVolumes(path string, volumes []corev1.Volume) []string {
	var problems []string
	for i, v := range volumes {
		if slices.Contains(children.ReservedVolumes, v.Name) {
			problems = append(problems, fmt.Sprintf("%s[%d]: the volume name %s is reserved for asya-sync", path, i, v.Name))
		}
	}
	return problems
}

func validateRanges(spec v1alpha1.AsyncActorSpec) []string {
	var problems []string
	check := func(bad bool, format string, args ...any) {
		if bad {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	s := spec.Scaling
	check(spec.Workload.Kind != v1alpha1.KindDeployment && spec.Workload.Kind != v1alpha1.KindStatefulSet,
		"spec.workload.kind: %q is not Deployment or StatefulSet", spec.Workload.Kind)
	check(*spec.Workload.Replicas < 0, "spec.workload.replicas: %d must not be negative", *spec.Workload.Replicas)
	check(*s.MinReplicas < 0, "spec.scaling.minReplicas: %d must not be negative", *s.MinReplicas)
	check(*s.MaxReplicas < 1, "spec.scaling.maxReplicas: %d must be at least 1", *s.MaxReplicas)
	check(*s.MinReplicas > *s.MaxReplicas, "spec.scaling.minReplicas: %d exceeds maxReplicas %d", *s.MinReplicas, *s.MaxReplicas)
	check(s.QueueLength < 1, "spec.scaling.queueLength: %d must be at least 1", s.QueueLength)
	check(spec.Timeout.Processing < 1, "spec.timeout.processing: %d must be at least 1 second", spec.Timeout.Processing)
	check(*spec.Timeout.GracefulShutdown < 0, "spec.timeout.gracefulShutdown: %d must not be negative", *spec.Timeout.GracefulShutdown)
	return problems
}

// validateAdvanced checks what KEDA's admission webhook would refuse, so
// the actor says why instead of its ScaledObject failing to apply.
func validateAdvanced(spec v1alpha1.AsyncActorSpec) []string {
	adv := spec.Scaling.Advanced
	if adv == nil {
		return nil
	}
	var problems []string
	if (adv.Formula == "") != (adv.Target == "") {
		problems = append(problems, "spec.scaling.advanced: formula and target must be set together")
	}
	if adv.MetricType == "Utilization" {
		problems = append(problems, "spec.scaling.advanced.metricType: KEDA's scalingModifiers accept AverageValue or Value, not Utilization")
	}
	for i, t := range adv.Triggers {
		if ref := t.AuthenticationRef; ref != nil && ref.Kind != "" && ref.Kind != "TriggerAuthentication" {
			problems = append(problems, fmt.Sprintf(
				"%s: %q: a trigger may use only a TriggerAuthentication in the actor's namespace",
				spec.FieldPath(fmt.Sprintf("spec.scaling.advanced.triggers[%d].authenticationRef.kind", i)), ref.Kind))
		}
	}
	return problems
}

// validateClaims checks spec.workload.volumeClaimTemplates: a StatefulSet's
// only, each a PersistentVolumeClaim with a name.
func validateClaims(w v1alpha1.WorkloadSpec) []string {
	if len(w.VolumeClaimTemplates) == 0 {
		return nil
	}
	if w.Kind != v1alpha1.KindStatefulSet {
		return []string{"spec.workload.volumeClaimTemplates: only a StatefulSet has volume claim templates; set spec.workload.kind: StatefulSet"}
	}
	claims, err := w.ClaimTemplates()
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for i, c := range claims {
		if c.Name == "" {
			problems = append(problems, fmt.Sprintf("spec.workload.volumeClaimTemplates[%d].metadata.name: required: pods mount the claim by it", i))
		}
	}
	return problems
}

// validateRuntimeUpdate checks the actor's own runtime update policy, an
// annotation the CRD cannot check (docs/upgrade.md).
func validateRuntimeUpdate(actor *v1alpha1.AsyncActor) []string {
	v, ok := actor.Annotations[children.AnnotationRuntimeUpdate]
	if !ok || asyaruntime.Update(v).Valid() {
		return nil
	}
	return []string{fmt.Sprintf("metadata.annotations[%s]: %q is not %s or %s",
		children.AnnotationRuntimeUpdate, v, asyaruntime.Immediate, asyaruntime.Pinned)}
}
