package children

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Paths shared by the runtime and the sidecar.
const (
	SocketDir         = "/var/run/asya"
	RuntimeScriptPath = "/opt/asya/asya_runtime.py"
	RuntimeScriptKey  = "asya_runtime.py"
	readyCheck        = "test -S " + SocketDir + "/asya-runtime.sock && test -f " + SocketDir + "/runtime-ready"
)

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

// wireRuntime turns the user's asya-runtime container into one that runs
// the runtime script. The user's env wins except for ASYA_SOCKET_DIR, which
// must match the mount; the user's probes win where set.
func (in Input) wireRuntime(c *corev1.Container) {
	c.Command = []string{in.Actor.Spec.Workload.PythonExecutable, RuntimeScriptPath}
	if in.generation().hardensRuntime(in) && c.SecurityContext == nil {
		c.SecurityContext = restrictedContext()
	}
	c.Env = setEnv(c.Env, corev1.EnvVar{Name: "ASYA_SOCKET_DIR", Value: SocketDir})
	c.Env = in.generation().runtimeEnv(in, c.Env)
	c.VolumeMounts = addMounts(c.VolumeMounts, append(sharedMounts(),
		corev1.VolumeMount{Name: volumeRuntime, MountPath: RuntimeScriptPath, SubPath: RuntimeScriptKey, ReadOnly: true}))
	in.wireStateProxies(c)
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
