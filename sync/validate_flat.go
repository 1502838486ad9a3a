package sync

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
)

// validateFlat lists what is wrong with a flat spec, naming its own fields
// (the pod template it becomes is asya-sync's, not the user's).
func validateFlat(spec v1alpha1.AsyncActorSpec) []string {
	c := spec.CurrentSpec
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(c.Flavors) > 0 {
		add("spec.flavors: %s: flavors are Crossplane EnvironmentConfigs, which asya-sync cannot merge; "+
			"write their fields into the actor and remove flavors", strings.Join(c.Flavors, ", "))
	}
	if len(c.StateProxy) > 0 {
		add("spec.stateProxy: asya-sync's runtime has no state proxy layer (ASYA_STATE_PROXY_MOUNTS); " +
			"remove stateProxy, or keep the actor on upstream's installation")
	}
	if !isDNSLabel(c.Actor) {
		add("spec.actor: %q must be a DNS label (lower-case letters, digits and '-', at most 63)", c.Actor)
	}
	lists, err := c.Decoded()
	if err != nil {
		add("%v", err)
	}
	problems = append(problems, reservedNames("spec.initContainers", lists.InitContainers)...)
	problems = append(problems, reservedNames("spec.sidecars", lists.Sidecars)...)
	for i, v := range lists.Volumes {
		for _, r := range children.ReservedVolumes {
			if v.Name == r {
				add("spec.volumes[%d]: the volume name %s is reserved for asya-sync", i, r)
			}
		}
	}
	problems = append(problems, validateResiliency(c.Resiliency)...)
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
