package children

import corev1 "k8s.io/api/core/v1"

// Paths shared by the runtime and the sidecar.
const (
	SocketDir         = "/var/run/asya"
	RuntimeScriptPath = "/opt/asya/asya_runtime.py"
	RuntimeScriptKey  = "asya_runtime.py"
	readyCheck        = "test -S " + SocketDir + "/asya-runtime.sock && test -f " + SocketDir + "/runtime-ready"
)

// wireRuntime turns the user's asya-runtime container into one that runs
// the runtime script. The user's env wins except for ASYA_SOCKET_DIR, which
// must match the mount; the user's probes win where set.
func (in Input) wireRuntime(c *corev1.Container) {
	c.Command = []string{in.Actor.Spec.Workload.PythonExecutable, RuntimeScriptPath}
	c.Env = setEnv(c.Env, corev1.EnvVar{Name: "ASYA_SOCKET_DIR", Value: SocketDir})
	if in.isEndActor() {
		c.Env = addEnv(c.Env, corev1.EnvVar{Name: "ASYA_ENABLE_VALIDATION", Value: "false"})
	}
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

// isEndActor reports whether the actor ends a route.
func (in Input) isEndActor() bool {
	return in.Actor.Name == HappyEnd || in.Actor.Name == ErrorEnd
}

// End actors' names.
const (
	HappyEnd = "happy-end"
	ErrorEnd = "error-end"
)
