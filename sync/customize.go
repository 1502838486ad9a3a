package sync

import (
	"slices"

	"github.com/asya-sh/asya-sync/api/flavor"
	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/status"
)

// Customize names the related objects a sync of the actor reads, as far
// as the service's watch configuration allows: its pods, the Secrets its
// transport references (so that a missing one shows in status before any
// pod fails on it), the actors of the same name in every namespace, which
// claim the same queue, and the actor's Namespace, whose Pod Security
// level the pods must pass, and the flavors its spec names (cluster-scoped
// EnvironmentConfigs, by name), which the sync merges into the spec; a
// change to one resyncs its actors.
//
// Every rule costs Metacontroller a watch of that resource in the whole
// cluster and, on each event of it anywhere, a pass over every actor
// (docs/performance.md#what-metacontroller-pays): KEDA's HPA is therefore
// not asked for, the ScaledObject (a child) names it and the workload
// (a child) carries the replicas it wants.
// The rule for actors names no namespace: Metacontroller then lists every
// namespace, and with hook version v2 keys the objects namespace/name so
// that actors of one name do not overwrite each other. Namespaces are
// cluster-scoped: selected by name alone.
func (h *Handler) Customize(req *hook.CustomizeRequest) *hook.CustomizeResponse {
	actor := req.Actor
	h.serviceDefaults(actor)
	ns, name := actor.Namespace, actor.Name
	watch := h.Config.Watch
	var rules []hook.RelatedResourceRule
	if watch.Pods == config.Watched {
		rules = append(rules, hook.RelatedResourceRule{APIVersion: "v1", Resource: "pods", Namespace: ns,
			LabelSelector: &hook.LabelSelector{MatchLabels: map[string]string{children.LabelActor: name}}})
	}
	switch _, scoped := actor.QueueActor(); {
	case watch.Namesakes == config.Watched && scoped:
		// Flat actors claim asya-<namespace>-<actor>, spec.actor being no
		// name Metacontroller can select by: every actor of the namespace.
		rules = append(rules, hook.RelatedResourceRule{APIVersion: v1alpha1.GroupVersion.String(), Resource: v1alpha1.Resource, Namespace: ns})
	case watch.Namesakes == config.Watched:
		rules = append(rules, hook.RelatedResourceRule{APIVersion: v1alpha1.GroupVersion.String(), Resource: v1alpha1.Resource, Names: []string{name}})
	}
	if names := h.secretNames(actor.Spec.Transport); watch.Secrets == config.Watched && len(names) > 0 {
		rules = append(rules, hook.RelatedResourceRule{APIVersion: "v1", Resource: "secrets", Namespace: ns, Names: names})
	}
	rules = append(rules, hook.RelatedResourceRule{APIVersion: "v1", Resource: "namespaces", Names: []string{ns}})
	if names := actor.Spec.Flavors; len(names) > 0 {
		rules = append(rules, hook.RelatedResourceRule{APIVersion: flavor.APIVersion, Resource: flavor.Resource, Names: names})
	}
	return &hook.CustomizeResponse{RelatedResources: rules}
}

// unwatched is what the status must say it is not told, for the actor's
// transport.
func (h *Handler) unwatched(transportName string) status.Unwatched {
	watch := h.Config.Watch
	return status.Unwatched{
		Pods:      watch.Pods.Off(),
		Secrets:   watch.Secrets.Off() && len(h.secretNames(transportName)) > 0,
		Namesakes: watch.Namesakes.Off(),
	}
}

func (h *Handler) secretNames(transportName string) []string {
	var names []string
	for _, ref := range h.Config.Transports[transportName].SecretRefs() {
		if !slices.Contains(names, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	return names
}
