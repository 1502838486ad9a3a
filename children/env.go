package children

import (
	corev1 "k8s.io/api/core/v1"
)

func value(name, v string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: v} }

// setEnv puts e in place of an entry of the same name, or appends it.
func setEnv(env []corev1.EnvVar, e corev1.EnvVar) []corev1.EnvVar {
	out := append([]corev1.EnvVar(nil), env...)
	for i := range out {
		if out[i].Name == e.Name {
			out[i] = e
			return out
		}
	}
	return append(out, e)
}

// addEnv appends e unless an entry of that name exists: the existing wins.
func addEnv(env []corev1.EnvVar, e corev1.EnvVar) []corev1.EnvVar {
	for _, have := range env {
		if have.Name == e.Name {
			return env
		}
	}
	return append(env, e)
}
