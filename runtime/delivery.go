package runtime

// Delivery is how the runtime script reaches an actor's pods: the name
// the service configuration gives it. It is plain data of its own so that
// the pure builders (children/) need not import the service configuration,
// which links the broker clients. What each does is in children/, one
// file per delivery.
type Delivery string

const (
	ConfigMap     Delivery = "configMap" // the default
	PodTemplate   Delivery = "podTemplate"
	InitContainer Delivery = "initContainer"
)
