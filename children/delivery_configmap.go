package children

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// configMapDelivery: a per-actor ConfigMap child, mounted into the pods.
// It is per actor because a child has exactly one owner under
// Metacontroller.
type configMapDelivery struct{}

func (configMapDelivery) check(string) error  { return nil }
func (configMapDelivery) scriptInImage() bool { return false }

func (configMapDelivery) volume(in Input) corev1.VolumeSource {
	return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: RuntimeConfigMapName(in.Actor.Name)},
		DefaultMode:          ptr.To(scriptMode),
	}}
}

func (configMapDelivery) configMap(in Input, rt Runtime) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: in.objectMeta(RuntimeConfigMapName(in.Actor.Name)),
		Data:       map[string]string{RuntimeScriptKey: rt.Script.Source},
	}
}

func (configMapDelivery) template(Input, Runtime, *corev1.PodTemplateSpec) {}

// running: the ConfigMap's script, when it is the one the pod template's
// hash names (not a ConfigMap edited by hand).
func (configMapDelivery) running(r *Running, current Runtime) (Runtime, bool) {
	return keptScript(r.ConfigMapScript, r, current)
}

func (configMapDelivery) name(rt Runtime) string { return rt.Script.Hash }
