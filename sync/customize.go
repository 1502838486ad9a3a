package sync

import (
	"slices"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
)

// Customize names the related objects every sync of the actor needs: its
// pods, KEDA's HPA, the Secrets its transport references, so that a
// missing Secret shows in status before any pod fails on it, the actors
// of the same name in every namespace, which claim the same queue, and the
// actor's Namespace, whose Pod Security level the pods must pass.
// The rule for actors names no namespace: Metacontroller then lists every
// namespace, and with hook version v2 keys the objects namespace/name so
// that actors of one name do not overwrite each other. Namespaces are
// cluster-scoped: selected by name alone.
func (h *Handler) Customize(req *hook.CustomizeRequest) *hook.CustomizeResponse {
	actor := req.Actor
	ns, name := actor.Namespace, actor.Name
	rules := []hook.RelatedResourceRule{
		{APIVersion: "v1", Resource: "pods", Namespace: ns,
			LabelSelector: &hook.LabelSelector{MatchLabels: map[string]string{children.LabelActor: name}}},
		{APIVersion: "autoscaling/v2", Resource: "horizontalpodautoscalers", Namespace: ns,
			Names: []string{v1alpha1.HPAName(name)}},
		{APIVersion: v1alpha1.GroupVersion.String(), Resource: v1alpha1.Resource, Names: []string{name}},
	}
	if names := h.secretNames(actor.Spec.Transport); len(names) > 0 {
		rules = append(rules, hook.RelatedResourceRule{APIVersion: "v1", Resource: "secrets", Namespace: ns, Names: names})
	}
	rules = append(rules, hook.RelatedResourceRule{APIVersion: "v1", Resource: "namespaces", Names: []string{ns}})
	return &hook.CustomizeResponse{RelatedResources: rules}
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
