package v1alpha1

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestShapeOf(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       Generation
		wantErr    string // a substring of the error; "" for none
	}{
		{"nested", `{"transport":"mq","workload":{"template":{}}}`, Nested, ""},
		{"flat", `{"actor":"a","image":"i","handler":"m.f"}`, Flat, ""},
		{"shared fields only", `{"transport":"mq","sidecar":{},"scaling":{"enabled":true}}`, Nested, ""},
		{"flat scaling", `{"actor":"a","scaling":{"minReplicaCount":1}}`, Flat, ""},
		{"mixed", `{"actor":"a","workload":{}}`, Nested, "workload of the nested 0.3 shape and actor of the flat shape"},
		{"mixed scaling", `{"workload":{},"scaling":{"minReplicaCount":1}}`, Nested, "scaling.minReplicaCount of the flat shape"},
		// Crossplane's claim fields, as upstream's crew chart and
		// Crossplane's API server write them: flat, and ignored.
		{"crew claim", `{"actor":"x-sink","transport":"sqs","compositionSelector":{"matchLabels":{"asya.sh/transport":"sqs"}},
			"image":"i","handler":"asya_crew.sink.sink_handler"}`, Flat, ""},
		{"every claim field", `{"actor":"a","image":"i","handler":"m.f",
			"compositionRef":{"name":"asyncactor-sqs"},"compositionRevisionRef":{"name":"asyncactor-sqs-1a2b3c"},
			"compositionRevisionSelector":{"matchLabels":{"channel":"stable"}},
			"compositionSelector":{"matchLabels":{"asya.sh/transport":"sqs"}},"compositionUpdatePolicy":"Automatic",
			"compositeDeletePolicy":"Background","resourceRef":{"apiVersion":"asya.sh/v1alpha1","kind":"XAsyncActor","name":"a-x7k2p"},
			"writeConnectionSecretToRef":{"name":"a-conn"},"publishConnectionDetailsTo":{"name":"a-conn"}}`, Flat, ""},
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

// The shape rule is written twice: ShapeOf's field lists for the hook, the
// CRD's CEL rule for admission. Both must name the same fields.
func TestCRDShapeRuleNamesTheSameFields(t *testing.T) {
	data, err := os.ReadFile("../../manifests/crd/asya.sh_asyncactors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Validations []struct {
								Rule    string `json:"rule"`
								Message string `json:"message"`
							} `json:"x-kubernetes-validations"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	var rule string
	for _, v := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Validations {
		if strings.HasPrefix(v.Message, "mixes two shapes") {
			rule = v.Rule
		}
	}
	if rule == "" {
		t.Fatal("the CRD has no rule refusing a spec that mixes the shapes")
	}
	// The rule is !(nested fields) || !(flat fields).
	halves := strings.SplitN(rule, ") || !(", 2)
	if len(halves) != 2 {
		t.Fatalf("rule %q is not !(nested) || !(flat)", rule)
	}
	has := regexp.MustCompile(`has\(self\.(\w+)\)`)
	names := func(s string) []string {
		var out []string
		for _, m := range has.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		shape  string
		rule   []string
		listed []string
	}{
		{"nested", names(halves[0]), nestedFields},
		{"flat", names(halves[1]), flatFields},
	} {
		want := slices.Sorted(slices.Values(tc.listed))
		if !slices.Equal(tc.rule, want) {
			t.Errorf("the CRD's rule names %v as %s fields, ShapeOf %v", tc.rule, tc.shape, want)
		}
	}
}
