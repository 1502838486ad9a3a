package children

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// flat renders what is particular to the actors of upstream Asya 0.5+ and
// 1.x, whose sidecar talks HTTP to the runtime and names queues
// asya-<namespace>-<actor>.
type flat struct{}

// runtimeEnv: the end actors' validation off right after ASYA_HANDLER,
// where upstream's compositions write it. A user's entry of the same name
// is a collision, which the sync reports.
func (flat) runtimeEnv(in Input, env []corev1.EnvVar) []corev1.EnvVar {
	if !in.endsRoutes() {
		return env
	}
	at := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "ASYA_HANDLER" }) + 1
	return slices.Insert(slices.Clone(env), at, validationOff)
}

func (flat) script(r RuntimeService) asyaruntime.Script { return r.HTTPScript }
func (flat) sidecarImage(s Service) string              { return s.FlatSidecarImage }

// hardensRuntime: the runtime container is asya-sync's, so in a namespace
// that enforces "restricted" asya-sync answers for it.
func (flat) hardensRuntime(in Input) bool { return in.Decided.Restricted }

// Prefixes of the actor's labels its children do not carry, as upstream's
// compositions leave them out: Crossplane's bookkeeping, and the
// app.kubernetes.io/ labels of whatever manages the actor itself (Argo
// CD's app.kubernetes.io/instance on a child would make Argo CD prune it
// as its own).
var notCopiedPrefixes = []string{"crossplane.io/", "app.kubernetes.io/"}

// actorLabels are the actor's labels its children and pods carry, as
// upstream's compositions copy a claim's (team, cost-center, ...). Not
// copied either: a key asya-sync sets on a child or a pod, so that no
// child says other than its pods, and Metacontroller's selector label,
// which on a child must be the actor's uid (Metacontroller refuses the
// whole sync otherwise).
func (flat) actorLabels(in Input) map[string]string {
	var out map[string]string
	for k, v := range in.Actor.Labels {
		if k == LabelMetacontrollerSelector || slices.Contains(ownLabelKeys, k) ||
			slices.ContainsFunc(notCopiedPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// sidecarEnv is the environment the current sidecar reads, before the
// user's, in the order upstream's compositions write it.
func (f flat) sidecarEnv(in Input) []corev1.EnvVar {
	spec := in.Actor.Spec
	env := []corev1.EnvVar{
		value("ASYA_LOG_LEVEL", "info"),
		value("ASYA_SOCKET_DIR", SocketDir),
		value("ASYA_ACTOR_NAME", spec.Actor),
		value("ASYA_NAMESPACE", in.Actor.Namespace),
		value("ASYA_ACTOR_SINK", in.Service.Ends.Sink),
		value("ASYA_ACTOR_SUMP", in.Service.Ends.Sump),
		value("ASYA_TRANSPORT", in.Transport.Type()),
	}
	env = append(env, in.Transport.SidecarEnv(in.queue())...)
	if in.Service.GatewayURL != "" {
		env = append(env, value(gatewayURLEnv, in.Service.GatewayURL))
	}
	if in.endsRoutes() {
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

// seconds as a Go duration, as the sidecar parses it.
func seconds(n int32) string { return strconv.Itoa(int(n)) + "s" }
