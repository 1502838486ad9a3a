package children

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/transport/sqs"
)

// TestActorLabels: a flat actor's labels reach every child and its pods, as
// upstream's compositions copy a claim's, but never with one of
// asya-sync's keys, nor into the selector; a 0.3 actor's children carry
// only asya-sync's.
func TestActorLabels(t *testing.T) {
	actorLabels := map[string]string{
		"team":                       "ml",
		"cost-center":                "7",
		"app.kubernetes.io/instance": "argo-app", // the tool's that manages the actor: not copied
		"crossplane.io/claim-name":   "echo",     // Crossplane's: not copied
		"controller-uid":             "1234",     // Metacontroller's selector: not copied
		LabelActor:                   "other",    // asya-sync's keys, on a child or a pod: not copied
		LabelApp:                     "other",
		LabelWorkload:                "other",
		v1alpha1.LabelFlatActor:      "other",
	}
	flat := func(s *v1alpha1.AsyncActorSpec) {
		s.AsyaGeneration = v1alpha1.Flat
		s.Transport = ""
		s.Actor, s.Image, s.Handler = "echo-actor", "ghcr.io/acme/echo:1", "echo.handle"
	}
	irsa := sqsTransport(func(s *sqs.Settings) { s.ActorRoleArn = actorRole })
	selector := map[string]string{LabelApp: "echo", LabelActor: "echo", LabelWorkload: "deployment"}

	tests := []struct {
		name          string
		in            Input
		children, pod map[string]string
	}{
		{
			name:     "0.3 actor: asya-sync's only, as the operator's",
			in:       withLabels(scalingInput(irsa, nil), actorLabels),
			children: Labels("echo"),
			pod:      selector,
		},
		{
			name:     "flat actor: its own labels under asya-sync's",
			in:       withLabels(scalingInput(irsa, flat), actorLabels),
			children: merged(Labels("echo"), map[string]string{"team": "ml", "cost-center": "7"}),
			pod:      merged(selector, map[string]string{"team": "ml", "cost-center": "7", v1alpha1.LabelFlatActor: "echo-actor"}),
		},
		{
			name:     "flat actor without labels",
			in:       scalingInput(irsa, flat),
			children: Labels("echo"),
			pod:      merged(selector, map[string]string{v1alpha1.LabelFlatActor: "echo-actor"}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := PodsOf(tc.in)
			tmpl := pods.Template
			objs := []Object{RuntimeConfigMap(tc.in, pods), ServiceAccount(tc.in), TriggerAuthentication(tc.in), ScaledObject(tc.in),
				Deployment(tc.in, pods), StatefulSet(tc.in, pods)}
			for _, obj := range objs {
				if diff := cmp.Diff(tc.children, obj.GetLabels()); diff != "" {
					t.Errorf("%T labels (-want +got):\n%s", obj, diff)
				}
			}
			if diff := cmp.Diff(tc.pod, tmpl.Labels); diff != "" {
				t.Errorf("pod template labels (-want +got):\n%s", diff)
			}
			d := Deployment(tc.in, pods)
			if diff := cmp.Diff(selector, d.Spec.Selector.MatchLabels); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
		})
	}
}

func withLabels(in Input, labels map[string]string) Input {
	in.Actor.Labels = maps.Clone(labels)
	return in
}
