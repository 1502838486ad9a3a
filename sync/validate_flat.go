package sync

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
)

// validate names the flat spec's own fields (the pod template it becomes
// is asya-sync's, not the user's).
func (flat) validate(_ string, spec v1alpha1.AsyncActorSpec, _ config.Transport) []string {
	c := spec.CurrentSpec
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !isDNSLabel(c.Actor) {
		add("spec.actor: %q must be a DNS label (lower-case letters, digits and '-', at most 63)", c.Actor)
	}
	lists, err := c.Decoded()
	if err != nil {
		add("%v", err)
	}
	problems = append(problems, reservedNames("spec.initContainers", lists.InitContainers)...)
	problems = append(problems, reservedNames("spec.sidecars", lists.Sidecars)...)
	problems = append(problems, reservedVolumes("spec.volumes", lists.Volumes)...)
	problems = append(problems, validateResiliency(c.Resiliency)...)
	problems = append(problems, validateStateProxies(c.StateProxy)...)
	s := spec.Scaling
	if *s.MinReplicas > *s.MaxReplicas {
		add("spec.scaling.minReplicaCount: %d exceeds maxReplicaCount %d", *s.MinReplicas, *s.MaxReplicas)
	}
	if s.QueueLength < 1 {
		add("spec.scaling.queueLength: %d must be at least 1", s.QueueLength)
	}
	return append(problems, validateAdvanced(spec)...)
}

// reservedNames refuses containers named asya-*: the pod's own.
func reservedNames(path string, cs []corev1.Container) []string {
	var problems []string
	for i, c := range cs {
		switch {
		case c.Name == "":
			problems = append(problems, fmt.Sprintf("%s[%d].name: required", path, i))
		case strings.HasPrefix(c.Name, "asya-"):
			problems = append(problems, fmt.Sprintf("%s[%d].name: %q: names starting with asya- are reserved for the containers asya-sync adds", path, i, c.Name))
		}
	}
	return problems
}

// validateResiliency refuses what either sidecar would refuse at start or
// read otherwise than written, since each form is also given to the other
// sidecar line translated (docs/design.md#retries).
func validateResiliency(r *v1alpha1.Resiliency) []string {
	if r == nil {
		return nil
	}
	var problems []string
	if r.ActorTimeout != "" {
		if d, err := time.ParseDuration(r.ActorTimeout); err != nil || d < time.Second {
			problems = append(problems, fmt.Sprintf("spec.resiliency.actorTimeout: %q is not a duration of at least 1s (for example 30s or 5m)", r.ActorTimeout))
		}
	}
	if len(r.Rules) > 0 || len(r.Policies) > 0 {
		if r.Retry != nil || len(r.NonRetryableErrors) > 0 {
			problems = append(problems, "spec.resiliency: retry and nonRetryableErrors (0.5) and policies and rules (1.x) are two forms of one setting; use one")
		}
		for i, rule := range r.Rules {
			if _, ok := r.Policies[rule.Policy]; !ok {
				problems = append(problems, fmt.Sprintf("spec.resiliency.rules[%d].policy: %q is not in spec.resiliency.policies", i, rule.Policy))
			}
		}
	}
	problems = append(problems, validateRetry(r.Retry)...)
	return append(problems, validatePolicies(*r)...)
}

// validateRetry: the 0.5 sidecar refuses intervals that are not positive
// and a coefficient under 1, and takes an interval it cannot parse for its
// default.
func validateRetry(rt *v1alpha1.Retry) []string {
	if rt == nil {
		return nil
	}
	var problems []string
	for _, f := range []struct{ name, v string }{{"initialInterval", rt.InitialInterval}, {"maxInterval", rt.MaxInterval}} {
		if d, err := time.ParseDuration(f.v); f.v != "" && (err != nil || d <= 0) {
			problems = append(problems, fmt.Sprintf("spec.resiliency.retry.%s: %q is not a positive duration (for example 500ms or 2s)", f.name, f.v))
		}
	}
	if c := rt.BackoffCoefficient; c != "" {
		if f, err := c.Float64(); err != nil || f < 1 {
			problems = append(problems, fmt.Sprintf("spec.resiliency.retry.backoffCoefficient: %s must be at least 1", c))
		}
	}
	return problems
}

// validatePolicies: the 1.x sidecar stops at a policy it cannot decode;
// the rest is upstream's XRD (maxAttempts at least 1, backoff one of
// three).
func validatePolicies(r v1alpha1.Resiliency) []string {
	policies, err := r.DecodedPolicies()
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		p, path := policies[name], "spec.resiliency.policies."+name
		if p.MaxAttempts != nil && *p.MaxAttempts < 1 {
			problems = append(problems, fmt.Sprintf("%s.maxAttempts: %d must be at least 1", path, *p.MaxAttempts))
		}
		switch p.Backoff {
		case "", "constant", "linear", "exponential":
		default:
			problems = append(problems, fmt.Sprintf("%s.backoff: %q is not constant, linear or exponential", path, p.Backoff))
		}
		for _, f := range []struct{ name, v string }{{"initialDelay", p.InitialDelay}, {"maxInterval", p.MaxInterval}, {"maxDuration", p.MaxDuration}} {
			if d, err := time.ParseDuration(f.v); f.v != "" && (err != nil || d < 0) {
				problems = append(problems, fmt.Sprintf("%s.%s: %q is not a duration (for example 500ms or 2s)", path, f.name, f.v))
			}
		}
	}
	return problems
}

func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// maxStateProxyName keeps asya-state-proxy-<name> a container name.
const maxStateProxyName = 63 - len(children.StateProxyPrefix)

// validateStateProxies checks what the CRD checks at admission, since a
// flavor's stateProxy comes from an EnvironmentConfig no schema checked,
// and what the pod needs: one container and one mount per name and path.
func validateStateProxies(proxies []v1alpha1.StateProxy) []string {
	var problems []string
	add := func(i int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("spec.stateProxy[%d].", i)+fmt.Sprintf(format, args...))
	}
	names, paths := map[string]bool{}, map[string]bool{}
	for i, p := range proxies {
		switch {
		case !isDNSLabel(p.Name) || len(p.Name) > maxStateProxyName:
			add(i, "name: %q must be a DNS label of at most %d characters: its container is %s<name>", p.Name, maxStateProxyName, children.StateProxyPrefix)
		case names[p.Name]:
			add(i, "name: %q is also an earlier entry's", p.Name)
		}
		switch path := p.Mount.Path; {
		case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, ":;"):
			add(i, "mount.path: %q must be an absolute path without ':' or ';'", path)
		case paths[path]:
			add(i, "mount.path: %q is also an earlier entry's", path)
		}
		names[p.Name], paths[p.Mount.Path] = true, true
		if p.WriteMode != "" && p.WriteMode != "buffered" && p.WriteMode != "passthrough" {
			add(i, "writeMode: %q must be buffered or passthrough", p.WriteMode)
		}
		if p.Connector.Image == "" {
			add(i, "connector.image: required")
		}
	}
	return problems
}
