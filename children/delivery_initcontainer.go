package children

import (
	"fmt"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// RuntimeWriterContainer is the init container that writes the runtime
// script into the pod. It runs asya-sync's own image, whose binary holds
// the script, as that image's nonroot user, from where the Dockerfile puts
// the binary.
const (
	RuntimeWriterContainer = "asya-runtime-init"
	runtimeWriterUID       = 65532
	runtimeWriterBinary    = "/asya-sync"
)

// initContainerDelivery: an init container of asya-sync's own image writes
// the script built into its binary into the pod. Neither the children nor
// etcd carry the script, so Metacontroller holds and sends the fewest
// bytes per actor.
type initContainerDelivery struct{}

func (initContainerDelivery) check(image string) error {
	if image == "" {
		return fmt.Errorf("runtimeImage: required with runtimeDelivery %s: asya-sync's own image, whose binary writes the runtime script", asyaruntime.InitContainer)
	}
	return nil
}

func (initContainerDelivery) scriptInImage() bool { return true }

func (initContainerDelivery) volume(Input) corev1.VolumeSource {
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
}

func (initContainerDelivery) configMap(Input, Runtime) *corev1.ConfigMap { return nil }

func (initContainerDelivery) template(_ Input, rt Runtime, tmpl *corev1.PodTemplateSpec) {
	tmpl.Spec.InitContainers = append([]corev1.Container{runtimeWriter(rt)}, tmpl.Spec.InitContainers...)
}

// running: the writer's image, when it is run as the current one is, with
// the same command, which says the protocol.
func (initContainerDelivery) running(r *Running, current Runtime) (Runtime, bool) {
	if r.WriterImage == "" || !slices.Equal(r.WriterCommand, writerCommand(current.Script)) {
		return Runtime{}, false
	}
	return Runtime{Script: asyaruntime.Script{Hash: r.Hash, HTTP: current.Script.HTTP}, Image: r.WriterImage}, true
}

// name is the image, which holds the script.
func (initContainerDelivery) name(rt Runtime) string { return rt.Image }

// runtimeWriter writes the script into the asya-runtime volume, which the
// runtime container then mounts like the ConfigMap's. Its resources are
// set so that namespaces whose quota demands them admit the pod; the
// requests are below any container's, so the pod's own do not change, and
// the CPU limit lets the binary start without being throttled.
func runtimeWriter(rt Runtime) corev1.Container {
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	return corev1.Container{
		Name:            RuntimeWriterContainer,
		Image:           rt.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         writerCommand(rt.Script),
		VolumeMounts:    []corev1.VolumeMount{{Name: volumeRuntime, MountPath: path.Dir(RuntimeScriptPath)}},
		Resources:       resources,
		SecurityContext: writerContext(),
	}
}

// writerCommand runs write-runtime for the script's protocol.
func writerCommand(script asyaruntime.Script) []string {
	return append([]string{runtimeWriterBinary}, append(asyaruntime.WriteArgs(script.HTTP), RuntimeScriptPath)...)
}

// writerContext is restricted, as the image's nonroot user, on a
// read-only root file system.
func writerContext() *corev1.SecurityContext {
	sc := restrictedContext()
	sc.ReadOnlyRootFilesystem = ptr.To(true)
	sc.RunAsUser = ptr.To[int64](runtimeWriterUID)
	return sc
}
