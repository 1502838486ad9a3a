package v1alpha1

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestShapeOf(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       Generation
		wantErr    string // a substring of the error; "" for none
	}{
		{"nested", `{"transport":"mq","workload":{"template":{}}}`, Nested, ""},
		{"nested timeout only", `{"timeout":{"processing":5}}`, Nested, ""},
		{"flat", `{"actor":"a","image":"i","handler":"m.f"}`, Flat, ""},
		{"flat field alone", `{"tolerations":[]}`, Flat, ""},
		{"empty spec", `{}`, Nested, ""},
		{"shared fields only", `{"transport":"mq","sidecar":{},"scaling":{"enabled":true,"pollingInterval":5}}`, Nested, ""},

		{"nested scaling", `{"workload":{},"scaling":{"minReplicas":1,"maxReplicas":2}}`, Nested, ""},
		{"nested scaling alone", `{"scaling":{"maxReplicas":2}}`, Nested, ""},
		{"nested advanced triggers", `{"workload":{},"scaling":{"advanced":{"formula":"q","target":"1","triggers":[{"type":"cron"}]}}}`, Nested, ""},
		{"flat scaling", `{"actor":"a","scaling":{"minReplicaCount":1}}`, Flat, ""},
		{"flat scaling alone", `{"scaling":{"additionalTriggers":[]}}`, Flat, ""},
		{"flat advanced formula", `{"actor":"a","scaling":{"advanced":{"formula":"q + c","target":"5"},"additionalTriggers":[{"type":"cron","name":"c"}]}}`, Flat, ""},
		{"advanced without triggers is shared", `{"scaling":{"advanced":{"restoreToOriginalReplicaCount":true}}}`, Nested, ""},
		{"advanced not an object", `{"actor":"a","scaling":{"advanced":"x"}}`, Flat, ""},
		{"scaling not an object", `{"actor":"a","scaling":3}`, Flat, ""},

		{"mixed", `{"actor":"a","workload":{}}`, Nested, "workload of the nested 0.3 shape and actor of the flat shape"},
		{"mixed names every field sorted", `{"workload":{},"timeout":{},"image":"i","actor":"a","scaling":{"maxReplicas":1,"minReplicaCount":0}}`, Nested,
			"timeout, workload, scaling.maxReplicas of the nested 0.3 shape and actor, image, scaling.minReplicaCount of the flat shape"},
		{"mixed scaling", `{"workload":{},"scaling":{"minReplicaCount":1}}`, Nested, "workload of the nested 0.3 shape and scaling.minReplicaCount of the flat shape"},
		{"nested scaling on flat", `{"actor":"a","scaling":{"minReplicas":1}}`, Nested, "scaling.minReplicas of the nested 0.3 shape and actor of the flat shape"},
		{"nested and flat scaling", `{"scaling":{"maxReplicas":1,"maxReplicaCount":1}}`, Nested, "scaling.maxReplicas of the nested 0.3 shape and scaling.maxReplicaCount of the flat shape"},
		{"advanced triggers on flat", `{"actor":"a","scaling":{"advanced":{"triggers":[{"type":"cron"}]}}}`, Nested,
			"scaling.advanced.triggers of the nested 0.3 shape and actor of the flat shape"},
		{"advanced triggers beside additional triggers", `{"scaling":{"advanced":{"triggers":[]},"additionalTriggers":[]}}`, Nested,
			"scaling.advanced.triggers of the nested 0.3 shape and scaling.additionalTriggers of the flat shape"},

		// Crossplane's claim fields, as upstream's crew chart and
		// Crossplane's API server write them: flat.
		{"crew claim", `{"actor":"x-sink","transport":"sqs","compositionSelector":{"matchLabels":{"asya.sh/transport":"sqs"}},
			"image":"i","handler":"asya_crew.sink.sink_handler"}`, Flat, ""},
		{"every claim field", `{"actor":"a","image":"i","handler":"m.f",
			"compositionRef":{"name":"asyncactor-sqs"},"compositionRevisionRef":{"name":"asyncactor-sqs-1a2b3c"},
			"compositionRevisionSelector":{"matchLabels":{"channel":"stable"}},
			"compositionSelector":{"matchLabels":{"asya.sh/transport":"sqs"}},"compositionUpdatePolicy":"Automatic",
			"compositeDeletePolicy":"Background","resourceRef":{"apiVersion":"asya.sh/v1alpha1","kind":"XAsyncActor","name":"a-x7k2p"},
			"writeConnectionSecretToRef":{"name":"a-conn"},"publishConnectionDetailsTo":{"name":"a-conn"}}`, Flat, ""},
		{"claim field alone", `{"compositionUpdatePolicy":"Manual"}`, Flat, ""},
		{"claim field on a nested spec", `{"transport":"mq","workload":{},"compositionRef":{"name":"c"}}`, Nested,
			"workload of the nested 0.3 shape and compositionRef of the flat shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ShapeOf([]byte(tc.spec))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ShapeOf: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ShapeOf error %v, want one with %q", err, tc.wantErr)
			case got != tc.want:
				t.Errorf("ShapeOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShapeOfRefusesWhatIsNoObject(t *testing.T) {
	for _, spec := range []string{`[]`, `"actor"`, `{"actor":`} {
		if _, err := ShapeOf([]byte(spec)); err == nil {
			t.Errorf("ShapeOf(%s): no error", spec)
		}
	}
}

// TestShapeListsCoverTheSpec: every JSON field of the spec, and of its
// scaling, is in exactly one of the shape rule's lists, and the flat
// lists are exactly CurrentSpec's and ClaimFields' fields. A field added
// to a struct without its list entry, or an entry naming no field, fails.
func TestShapeListsCoverTheSpec(t *testing.T) {
	scaling := jsonFields(reflect.TypeFor[ScalingSpec](), "")
	scaling = append(scaling, jsonFields(reflect.TypeFor[AdvancedScaling](), "advanced.")...)
	for _, tc := range []struct {
		name   string
		fields []string
		lists  map[string][]string
	}{
		{"AsyncActorSpec", jsonFields(reflect.TypeFor[AsyncActorSpec](), ""),
			map[string][]string{"nestedFields": nestedFields, "flatFields": flatFields, "sharedFields": sharedFields}},
		{"ScalingSpec and its advanced", scaling,
			map[string][]string{"nestedScaling": nestedScaling, "flatScaling": flatScaling, "sharedScaling": sharedScaling}},
		{"CurrentSpec and ClaimFields", append(jsonFields(reflect.TypeFor[CurrentSpec](), ""), jsonFields(reflect.TypeFor[ClaimFields](), "")...),
			map[string][]string{"flatFields": flatFields}},
		{"ClaimFields", jsonFields(reflect.TypeFor[ClaimFields](), ""), map[string][]string{"claimFields": claimFields}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.fields) < 2 {
				t.Fatalf("%s has the JSON fields %v: the reflection no longer reads it", tc.name, tc.fields)
			}
			in := map[string][]string{} // field -> the lists naming it
			for _, list := range slices.Sorted(maps.Keys(tc.lists)) {
				for _, f := range tc.lists[list] {
					in[f] = append(in[f], list)
				}
			}
			for _, f := range tc.fields {
				if len(in[f]) != 1 {
					t.Errorf("%s's field %s is in %v: put it in exactly one of %v", tc.name, f, in[f], slices.Sorted(maps.Keys(tc.lists)))
				}
			}
			for f, lists := range in {
				if !slices.Contains(tc.fields, f) {
					t.Errorf("%v name %s, which %s does not have", lists, f, tc.name)
				}
			}
		})
	}
}

// jsonFields are the JSON names of typ's serialized fields, those of
// inlined structs included, each after prefix.
func jsonFields(typ reflect.Type, prefix string) []string {
	var out []string
	for f := range typ.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
		case f.Anonymous && name == "" && strings.Contains(opts, "inline"):
			if f.Type.PkgPath() == typ.PkgPath() { // metav1's embedded types are no spec fields
				out = append(out, jsonFields(f.Type, prefix)...)
			}
		case name != "":
			out = append(out, prefix+name)
		}
	}
	return out
}
