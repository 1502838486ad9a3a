package children

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Paths shared by the runtime and the sidecar.
const (
	SocketDir         = "/var/run/asya"
	RuntimeScriptPath = "/opt/asya/asya_runtime.py"
	RuntimeScriptKey  = "asya_runtime.py"
	readyCheck        = "test -S " + SocketDir + "/asya-runtime.sock && test -f " + SocketDir + "/runtime-ready"
)

// RuntimeWriterContainer is the init container that writes the runtime
// script into the pod (asyaruntime.InitContainer). It runs asya-sync's
// own image, whose binary holds the script, as that image's nonroot user,
// from where the Dockerfile puts the binary.
const (
	RuntimeWriterContainer = "asya-runtime-init"
	runtimeWriterUID       = 65532
	runtimeWriterBinary    = "/asya-sync"
)

// runtimeWriter writes the script into the asya-runtime volume, which the
// runtime container then mounts like the ConfigMap's. Its resources are
// set so that namespaces whose quota demands them admit the pod; the
// requests are below any container's, so the pod's own do not change, and
// the CPU limit lets the binary start without being throttled.
func (in Input) runtimeWriter() corev1.Container {
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	return corev1.Container{
		Name:            RuntimeWriterContainer,
		Image:           in.RuntimeImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         in.runtimeWriterCommand(),
		VolumeMounts:    []corev1.VolumeMount{{Name: volumeRuntime, MountPath: path.Dir(RuntimeScriptPath)}},
		Resources:       resources,
		SecurityContext: writerContext(),
	}
}

// writerContext is restricted, as the image's nonroot user, on a
// read-only root file system.
func writerContext() *corev1.SecurityContext {
	sc := restrictedContext()
	sc.ReadOnlyRootFilesystem = ptr.To(true)
	sc.RunAsUser = ptr.To[int64](runtimeWriterUID)
	return sc
}

// restrictedContext passes Pod Security "restricted" for a container whose
// image runs as a non-root user.
func restrictedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// HTTPRuntimeFlag makes write-runtime write the flat actors' script.
const HTTPRuntimeFlag = "--http"

func (in Input) runtimeWriterCommand() []string {
	if in.Actor.Spec.AsyaGeneration == v1alpha1.Flat {
		return []string{runtimeWriterBinary, "write-runtime", HTTPRuntimeFlag, RuntimeScriptPath}
	}
	return []string{runtimeWriterBinary, "write-runtime", RuntimeScriptPath}
}

// wireRuntime turns the user's asya-runtime container into one that runs
// the runtime script. The user's env wins except for ASYA_SOCKET_DIR, which
// must match the mount; the user's probes win where set.
func (in Input) wireRuntime(c *corev1.Container) {
	c.Command = []string{in.Actor.Spec.Workload.PythonExecutable, RuntimeScriptPath}
	if in.HardenRuntime && c.SecurityContext == nil {
		c.SecurityContext = restrictedContext()
	}
	c.Env = setEnv(c.Env, corev1.EnvVar{Name: "ASYA_SOCKET_DIR", Value: SocketDir})
	c.Env = in.generation().runtimeEnv(in, c.Env)
	c.VolumeMounts = addMounts(c.VolumeMounts, append(sharedMounts(),
		corev1.VolumeMount{Name: volumeRuntime, MountPath: RuntimeScriptPath, SubPath: RuntimeScriptKey, ReadOnly: true}))
	if c.StartupProbe == nil {
		c.StartupProbe = readyProbe(2, 150)
	}
	if c.ReadinessProbe == nil {
		c.ReadinessProbe = readyProbe(10, 0)
	}
	if c.LivenessProbe == nil {
		c.LivenessProbe = readyProbe(30, 0)
	}
}

// readyProbe checks the runtime's socket and ready file. A zero failure
// threshold leaves the API server's default.
func readyProbe(period, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", readyCheck}}},
		PeriodSeconds:    period,
		FailureThreshold: failureThreshold,
	}
}
