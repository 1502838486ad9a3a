package children

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is a Kubernetes object with metadata.
type Object interface {
	metav1.Object
	runtime.Object
}

// Build returns every desired child of the actor, in the order they are
// best applied: identities and data before the workload that uses them,
// the workload before what scales it. pods is PodsOf(in).
func Build(in Input, pods Pods) []Object {
	var objs []Object
	if sa := ServiceAccount(in); sa != nil {
		objs = append(objs, sa)
	}
	if cm := RuntimeConfigMap(in, pods); cm != nil {
		objs = append(objs, cm)
	}
	objs = append(objs, Workload(in, pods))
	if !in.Decided.ScalingActive {
		return objs
	}
	if ta := TriggerAuthentication(in); ta != nil {
		objs = append(objs, ta)
	}
	if so := ScaledObject(in); so != nil {
		objs = append(objs, so)
	}
	return objs
}

// RuntimeConfigMap is the ConfigMap child that carries the pods' runtime,
// or nil when the service's runtimeDelivery takes none.
func RuntimeConfigMap(in Input, pods Pods) *corev1.ConfigMap {
	return in.delivery().configMap(in, pods.Runtime)
}
