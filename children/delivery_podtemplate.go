package children

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// AnnotationRuntimeScript holds the script itself on the pod template when
// it is delivered there.
const AnnotationRuntimeScript = "asya.sh/runtime-script"

// podTemplateDelivery: an annotation of the pod template, projected into
// the pods by the downward API. No ConfigMap child, so Metacontroller need
// not watch the cluster's ConfigMaps.
type podTemplateDelivery struct{}

func (podTemplateDelivery) check(string) error  { return nil }
func (podTemplateDelivery) scriptInImage() bool { return false }

func (podTemplateDelivery) volume(Input) corev1.VolumeSource {
	return corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: RuntimeScriptKey,
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1",
				FieldPath: "metadata.annotations['" + AnnotationRuntimeScript + "']"}}},
		DefaultMode: ptr.To(scriptMode),
	}}
}

func (podTemplateDelivery) configMap(Input, Runtime) *corev1.ConfigMap { return nil }

func (podTemplateDelivery) template(_ Input, rt Runtime, tmpl *corev1.PodTemplateSpec) {
	tmpl.Annotations[AnnotationRuntimeScript] = rt.Script.Source
}

func (podTemplateDelivery) running(r *Running, current Runtime) (Runtime, bool) {
	return keptScript(r.TemplateScript, r, current)
}

func (podTemplateDelivery) name(rt Runtime) string { return rt.Script.Hash }
