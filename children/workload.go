package children

import (
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// AnnotationRuntimeHash rolls the pods when the runtime script they are
// given changes (a subPath mount never sees ConfigMap updates), and says
// which script they run. Which one they are given: Given.
const AnnotationRuntimeHash = "asya.sh/runtime-hash"

// Pods is what the actor's pods are given, worked out once per call: the
// pod template and its TemplateHash, the runtime in it, and the current
// runtime's name while the pods keep another (Given).
type Pods struct {
	Template     corev1.PodTemplateSpec
	TemplateHash string
	Runtime      Runtime
	Pending      string
}

// PodsOf works out the actor's pods.
func PodsOf(in Input) Pods { return givenPods(in) }

// Workload returns the actor's Deployment or StatefulSet around its pods,
// PodsOf(in), which the caller works out once: it checks their template
// against Pod Security before building the rest.
func Workload(in Input, pods Pods) Object {
	if in.Actor.Spec.Workload.Kind == v1alpha1.KindStatefulSet {
		return StatefulSet(in, pods)
	}
	return Deployment(in, pods)
}

// Deployment returns the actor's workload as a Deployment.
func Deployment(in Input, pods Pods) *appsv1.Deployment {
	meta := in.objectMeta(in.Actor.Name)
	meta.Annotations = in.workloadAnnotations(pods)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: v1alpha1.KindDeployment},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: in.replicas(),
			Selector: &metav1.LabelSelector{MatchLabels: in.selectorLabels()},
			Template: pods.Template,
		},
	}
}

// StatefulSet returns the actor's workload as a StatefulSet: the
// Deployment's metadata, replicas, selector and template, and a
// serviceName, which names a headless Service the actor does not need but
// older API servers require.
func StatefulSet(in Input, pods Pods) *appsv1.StatefulSet {
	d := Deployment(in, pods)
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: v1alpha1.KindStatefulSet},
		ObjectMeta: d.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{Replicas: d.Spec.Replicas, ServiceName: in.Actor.Name,
			Selector: d.Spec.Selector, Template: d.Spec.Template, VolumeClaimTemplates: in.ClaimTemplates},
	}
}

// replicas is omitted when KEDA's HPA owns the count.
func (in Input) replicas() *int32 {
	switch {
	case in.Decided.Standby:
		return ptr.To(int32(0))
	case in.Decided.ScalingActive:
		return nil
	}
	return ptr.To(*in.Actor.Spec.Workload.Replicas)
}

func (in Input) selectorLabels() map[string]string {
	name := in.Actor.Name
	return map[string]string{
		LabelApp:      name,
		LabelActor:    name,
		LabelWorkload: strings.ToLower(in.Actor.Spec.Workload.Kind),
	}
}

// PodTemplate is the user's template with the sidecar, the runtime wiring
// and our labels and annotation added. Its labels are, each over the one
// before, the actor's that its generation copies, the template's, and the
// selector's: no other label can change which pods the workload selects.
func PodTemplate(in Input) corev1.PodTemplateSpec { return PodsOf(in).Template }

// podTemplate is PodTemplate with the runtime rt.
func podTemplate(in Input, rt Runtime) corev1.PodTemplateSpec {
	user := in.Actor.Spec.Workload.Template
	spec := *user.Spec.DeepCopy()
	for i := range spec.Containers {
		if spec.Containers[i].Name == v1alpha1.RuntimeContainer {
			in.wireRuntime(&spec.Containers[i])
		}
	}
	spec.Containers = append(append(spec.Containers, in.sidecar()), in.connectors()...)
	spec.Volumes = addVolumes(spec.Volumes, in.volumes())
	spec.TerminationGracePeriodSeconds = ptr.To(*in.Actor.Spec.Timeout.GracefulShutdown)
	spec.SecurityContext = withDefaultSeccomp(spec.SecurityContext, spec.OS)
	if in.usesIRSA() {
		spec.ServiceAccountName = ServiceAccountName(in.Actor.Name)
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      merged(in.generation().actorLabels(in), user.Metadata.Labels, in.selectorLabels()),
			Annotations: merged(user.Metadata.Annotations, map[string]string{AnnotationRuntimeHash: rt.Script.Hash}),
		},
		Spec: spec,
	}
	in.delivery().template(in, rt, &tmpl)
	return tmpl
}

// withDefaultSeccomp gives the pod the container runtime's default seccomp
// profile, which Pod Security "restricted" requires, unless the user chose
// a profile for the pod (Windows pods have none). Containers that set their
// own profile keep it. It changes nothing else: whoever needs root keeps it.
func withDefaultSeccomp(sc *corev1.PodSecurityContext, os *corev1.PodOS) *corev1.PodSecurityContext {
	if (sc != nil && sc.SeccompProfile != nil) || (os != nil && os.Name == corev1.Windows) {
		return sc
	}
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	return sc
}

// merged returns the maps laid over each other in order, the last on
// top, as a new map.
func merged(layers ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range layers {
		maps.Copy(out, m)
	}
	return out
}
