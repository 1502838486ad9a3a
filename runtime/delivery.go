package runtime

// Delivery is how the runtime script reaches an actor's pods. It is plain
// data of its own so that the pure builders (children/) need not import
// the service configuration, which links the broker clients.
type Delivery string

const (
	// ConfigMap: a per-actor ConfigMap child, mounted into the pods.
	ConfigMap Delivery = "configMap"
	// PodTemplate: an annotation of the pod template, projected into the
	// pods by the downward API. No ConfigMap child, so Metacontroller need
	// not watch the cluster's ConfigMaps.
	PodTemplate Delivery = "podTemplate"
	// InitContainer: an init container of asya-sync's own image writes the
	// script built into its binary into the pod. Neither the children nor
	// etcd carry the script, so Metacontroller holds and sends the fewest
	// bytes per actor.
	InitContainer Delivery = "initContainer"
)

// UsesConfigMap reports whether the script travels in a ConfigMap child:
// the default, also when the delivery is left unset.
func (d Delivery) UsesConfigMap() bool {
	return d != PodTemplate && d != InitContainer
}
