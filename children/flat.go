package children

import (
	"encoding/json"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// flat renders what is particular to the actors of upstream Asya 0.5+ and
// 1.x, whose sidecar talks HTTP to the runtime and names queues
// asya-<namespace>-<actor>.
type flat struct{}

func (flat) isEndActor(in Input) bool { return in.Actor.Spec.CurrentSpec.IsEndActor() }

// sidecarEnv is the environment the current sidecar reads, before the
// user's, in the order upstream's compositions write it.
func (f flat) sidecarEnv(in Input) []corev1.EnvVar {
	spec := in.Actor.Spec
	env := []corev1.EnvVar{
		value("ASYA_LOG_LEVEL", "info"),
		value("ASYA_SOCKET_DIR", SocketDir),
		value("ASYA_ACTOR_NAME", spec.Actor),
		value("ASYA_NAMESPACE", in.Actor.Namespace),
		value("ASYA_ACTOR_SINK", in.Sink),
		value("ASYA_ACTOR_SUMP", in.Sump),
		value("ASYA_TRANSPORT", in.Transport.Type()),
	}
	env = append(env, in.Transport.SidecarEnv(in.queue())...)
	if in.GatewayURL != "" {
		env = append(env, value(gatewayURLEnv, in.GatewayURL))
	}
	if f.isEndActor(in) {
		env = append(env, value("ASYA_IS_END_ACTOR", "true"))
	}
	env = append(env, resiliencyEnv(in)...)
	if t := spec.Tracing; t != nil && t.Endpoint != "" {
		env = append(env, value("OTEL_EXPORTER_OTLP_ENDPOINT", t.Endpoint))
		if t.Protocol != "" {
			env = append(env, value("OTEL_EXPORTER_OTLP_PROTOCOL", t.Protocol))
		}
	}
	return env
}

// resiliencyEnv is spec.resiliency in the variables of the form it is
// written in: 0.5's ASYA_RESILIENCY_RETRY_* or 1.x's JSON policies and
// rules. The actor timeout is always said, so that the sidecar and the
// queue (SQS visibility) agree on it.
func resiliencyEnv(in Input) []corev1.EnvVar {
	spec := in.Actor.Spec
	env := []corev1.EnvVar{value("ASYA_RESILIENCY_ACTOR_TIMEOUT", seconds(spec.Timeout.Processing))}
	r := spec.Resiliency
	if r == nil {
		return env
	}
	if rt := r.Retry; rt != nil {
		add := func(name, v string) {
			if v != "" {
				env = append(env, value("ASYA_RESILIENCY_RETRY_"+name, v))
			}
		}
		add("POLICY", rt.Policy)
		if rt.MaxAttempts != nil {
			add("MAX_ATTEMPTS", strconv.Itoa(int(*rt.MaxAttempts)))
		}
		add("INITIAL_INTERVAL", rt.InitialInterval)
		add("MAX_INTERVAL", rt.MaxInterval)
		add("BACKOFF_COEFFICIENT", rt.BackoffCoefficient.String())
		if rt.Jitter != nil {
			add("JITTER", strconv.FormatBool(*rt.Jitter))
		}
	}
	if len(r.NonRetryableErrors) > 0 {
		env = append(env, value("ASYA_RESILIENCY_NON_RETRYABLE_ERRORS", strings.Join(r.NonRetryableErrors, ",")))
	}
	if len(r.Policies) > 0 {
		env = append(env, value("ASYA_RESILIENCY_POLICIES", canonicalJSON(r.Policies)))
	}
	if len(r.Rules) > 0 {
		b, _ := json.Marshal(r.Rules)
		env = append(env, value("ASYA_RESILIENCY_RULES", string(b)))
	}
	return env
}

// canonicalJSON encodes v with every object's keys sorted, so that the
// variable does not change with the order the API server kept them in.
func canonicalJSON(v any) string {
	b, _ := json.Marshal(v) // raw JSON in: it re-encodes
	var generic any
	_ = json.Unmarshal(b, &generic)
	b, _ = json.Marshal(generic)
	return string(b)
}

// seconds as a Go duration, as the sidecar parses it.
func seconds(n int32) string { return strconv.Itoa(int(n)) + "s" }
