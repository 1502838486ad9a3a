package children

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuntimeConfigMap holds the runtime script. It is per actor because a
// child has exactly one owner under Metacontroller.
func RuntimeConfigMap(in Input) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: in.objectMeta(RuntimeConfigMapName(in.Actor.Name)),
		Data:       map[string]string{RuntimeScriptKey: in.RuntimeScript},
	}
}
