package children

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// delivery is one way the runtime script reaches an actor's pods
// (asyaruntime.Delivery). Each lives in a file of its own, registered in
// deliveries; nothing else knows which there are.
type delivery interface {
	// check reports what the service configuration lacks for it: image
	// is the configuration's runtimeImage.
	check(image string) error
	// scriptInImage: the pods run the script built into an image, so a
	// script the service loads from a file never reaches them.
	scriptInImage() bool
	// volume is the source of the asya-runtime volume, which holds the
	// script as RuntimeScriptKey.
	volume(in Input) corev1.VolumeSource
	// configMap is the ConfigMap child that carries rt, if it takes one.
	configMap(in Input, rt Runtime) *corev1.ConfigMap
	// template adds what carries rt to the pod template: annotations,
	// init containers.
	template(in Input, rt Runtime, tmpl *corev1.PodTemplateSpec)
	// running is what the pods were given, as a Runtime, and whether it
	// can stand in for current: whole, and of current's generation.
	running(r *Running, current Runtime) (Runtime, bool)
	// name names rt in AnnotationRuntimePending.
	name(rt Runtime) string
}

var deliveries = []struct {
	name asyaruntime.Delivery
	impl delivery
}{
	{asyaruntime.ConfigMap, configMapDelivery{}},
	{asyaruntime.PodTemplate, podTemplateDelivery{}},
	{asyaruntime.InitContainer, initContainerDelivery{}},
}

// deliveryOf is the delivery named d, if there is one.
func deliveryOf(d asyaruntime.Delivery) (delivery, bool) {
	for _, e := range deliveries {
		if e.name == d {
			return e.impl, true
		}
	}
	return nil, false
}

// CheckDelivery refuses a runtimeDelivery asya-sync does not know, or one
// the configuration does not complete (runtimeImage).
func CheckDelivery(d asyaruntime.Delivery, image string) error {
	impl, ok := deliveryOf(d)
	if !ok {
		return fmt.Errorf("runtimeDelivery: %q is not %s", d, deliveryNames())
	}
	return impl.check(image)
}

// ScriptInImage reports whether pods given the runtime by d run the
// script built into the service's runtimeImage.
func ScriptInImage(d asyaruntime.Delivery) bool {
	impl, ok := deliveryOf(d)
	return ok && impl.scriptInImage()
}

func deliveryNames() string {
	names := make([]string, 0, len(deliveries))
	for _, e := range deliveries {
		names = append(names, string(e.name))
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

// delivery is the service's way, ConfigMap when unset.
func (in Input) delivery() delivery {
	if impl, ok := deliveryOf(in.Service.Runtime.Delivery); ok {
		return impl
	}
	return configMapDelivery{}
}

// Runtime is a runtime as pods are given it: its script, and with
// InitContainer the image whose binary writes it.
type Runtime struct {
	Script asyaruntime.Script
	Image  string
}

// current is the runtime asya-sync serves the actor now: its generation's
// script.
func (in Input) current() Runtime {
	return Runtime{Script: in.generation().script(in.Service.Runtime), Image: in.Service.Runtime.Image}
}

// keptScript is the script the pods were given, read by src, if it can
// stand in for current's: the one the pod template's hash names, speaking
// the protocol current's speaks.
func keptScript(src func() asyaruntime.Script, r *Running, current Runtime) (Runtime, bool) {
	if src == nil {
		return Runtime{}, false
	}
	kept := src()
	if kept.Source == "" || kept.Hash != r.Hash || kept.HTTP != current.Script.HTTP {
		return Runtime{}, false
	}
	return Runtime{Script: kept, Image: current.Image}, true
}
