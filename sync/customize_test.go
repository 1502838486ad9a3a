package sync

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/asya-sh/asya-sync/api/flavor"
	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/config"
)

// TestCustomizeFollowsWatch: each watch switch removes its rule and only
// that one; the Namespace is always asked for.
func TestCustomizeFollowsWatch(t *testing.T) {
	all := []string{"pods", "asyncactors", "secrets", "namespaces"}
	watched := config.Watch{Pods: config.Watched, Secrets: config.Watched, Namesakes: config.Watched}
	for _, tc := range []struct {
		name  string
		watch config.Watch
		want  []string
	}{
		{"everything", watched, all},
		{"default: pods, Secrets and namesakes read by the service", config.WatchDefault, []string{"namespaces"}},
		{"no pods", config.Watch{Pods: config.Unseen, Secrets: config.Watched, Namesakes: config.Watched}, []string{"asyncactors", "secrets", "namespaces"}},
		{"no Secrets", config.Watch{Pods: config.Watched, Namesakes: config.Watched}, []string{"pods", "asyncactors", "namespaces"}},
		{"no namesakes", config.Watch{Pods: config.Watched, Secrets: config.Watched}, []string{"pods", "secrets", "namespaces"}},
		{"nothing", config.Watch{}, []string{"namespaces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := budgetHandler(t, "{}")
			h.Config.Watch = tc.watch
			var got []string
			for _, r := range h.Customize(&hook.CustomizeRequest{Actor: budgetActor(t, budgetActors[0])}).RelatedResources {
				got = append(got, r.Resource)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			u := h.unwatched("rabbitmq")
			pods := slices.Contains(got, "pods") || tc.watch.Pods == config.PodsWhileUnhealthy
			namesakes := slices.Contains(got, "asyncactors") || tc.watch.Namesakes == config.Read
			secrets := slices.Contains(got, "secrets") || tc.watch.Secrets == config.Read
			if u.Pods != !pods || u.Namesakes != !namesakes || u.Secrets != !secrets {
				t.Errorf("the status is told %+v is unwatched, but customize asks for %v", u, got)
			}
		})
	}
}

// TestCustomizeAsksForFlavors: the flavors an actor names, by name and in
// no namespace (EnvironmentConfigs are cluster-scoped); none for an actor
// that names none, which costs Metacontroller no watch.
func TestCustomizeAsksForFlavors(t *testing.T) {
	h := budgetHandler(t, "{}")
	actor := budgetActor(t, budgetActors[0])
	for _, r := range h.Customize(&hook.CustomizeRequest{Actor: actor}).RelatedResources {
		if r.Resource == flavor.Resource {
			t.Fatalf("an actor without flavors asks for %+v", r)
		}
	}
	actor.Spec.Flavors = []string{"gpu", "s3"}
	rules := h.Customize(&hook.CustomizeRequest{Actor: actor}).RelatedResources
	want := hook.RelatedResourceRule{APIVersion: "apiextensions.crossplane.io/v1beta1", Resource: "environmentconfigs", Names: []string{"gpu", "s3"}}
	if i := slices.IndexFunc(rules, func(r hook.RelatedResourceRule) bool { return r.Resource == flavor.Resource }); i < 0 {
		t.Fatalf("no rule for the flavors in %+v", rules)
	} else if diff := cmp.Diff(want, rules[i]); diff != "" {
		t.Errorf("flavors rule (-want +got):\n%s", diff)
	}
}
