package hook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/asya-sh/asya-sync/api/flavor"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// TestDecodeParentMergesFlavors: the spec every later step reads has the
// flavors merged; a flavor that does not merge is the spec's problem and
// leaves the actor's own spec; customize (nil) merges nothing.
func TestDecodeParentMergesFlavors(t *testing.T) {
	parent := json.RawMessage(`{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"a","namespace":"ns"},
		"spec":{"actor":"a","image":"i:1","handler":"m.f","flavors":["persist"]}}`)
	persist := flavor.Found{"persist": json.RawMessage(`{"stateProxy":[{"name":"s","mount":{"path":"/state"},"connector":{"image":"c:1"}}],
		"nodeSelector":{"zone":"a"}}`)}
	for _, tt := range []struct {
		name    string
		found   flavor.Found
		proxies int
		err     string
	}{
		{name: "merged", found: persist, proxies: 1},
		{name: "missing", found: flavor.Found{}, err: `no EnvironmentConfig "persist"`},
		{name: "not a spec", found: flavor.Found{"persist": json.RawMessage(`{"stateProxy":"s"}`)}, err: "with its flavors merged, spec:"},
		{name: "customize merges nothing", found: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			actor, specErr, err := DecodeParent(parent, tt.found)
			if err != nil {
				t.Fatal(err)
			}
			if tt.err == "" && specErr != nil || tt.err != "" && (specErr == nil || !strings.Contains(specErr.Error(), tt.err)) {
				t.Fatalf("spec error %v, want %q", specErr, tt.err)
			}
			if got := len(actor.Spec.StateProxy); got != tt.proxies {
				t.Errorf("%d state proxies, want %d", got, tt.proxies)
			}
			if actor.Spec.Actor != "a" || actor.Spec.Image != "i:1" || len(actor.Spec.Flavors) != 1 {
				t.Errorf("the actor's own spec is lost: %+v", actor.Spec.CurrentSpec)
			}
		})
	}
}

// TestDecodeParentReadsPastManagedFields: the parent's managedFields are
// read past, not decoded (no hook reads them): an entry no ObjectMeta
// would decode still leaves the parent answerable, while the rest of its
// metadata is read.
func TestDecodeParentReadsPastManagedFields(t *testing.T) {
	parent := json.RawMessage(`{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor",
		"metadata":{"name":"a","namespace":"ns","labels":{"team":"x"},"managedFields":[{"manager":5,"time":"not a time"}]},
		"spec":{"actor":"a","image":"i:1","handler":"m.f"}}`)
	actor, _, err := DecodeParent(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if actor.Name != "a" || actor.Labels["team"] != "x" || actor.ManagedFields != nil {
		t.Errorf("metadata %+v, want name a, label team=x and no managedFields", actor.ObjectMeta)
	}
	if _, _, err := DecodeParent(json.RawMessage(`{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"a","managedFields":[}}`), nil); err == nil {
		t.Error("managedFields that are not JSON: accepted")
	}
}

// TestDecodeParentDecodesSpecsAsEncodingJSON: the spec, and a spec error's
// message, are what encoding/json makes of the same bytes: field names
// matched without case, the last of duplicate names taken, and a value
// that does not decode reported in encoding/json's words, with the rest
// of the spec kept as it decoded.
func TestDecodeParentDecodesSpecsAsEncodingJSON(t *testing.T) {
	for _, spec := range []string{
		`{"actor":"a","image":"i:1","handler":"m.f","replicas":2}`,
		`{"Actor":"a","IMAGE":"i:1","handler":"m.f","handler":"m.g"}`,
		`{"transport":"rabbitmq","workload":{"template":{"spec":{"containers":[{"name":"asya-runtime","image":"i:1"}]}}}}`,
		`{"actor":"a","image":"i:1","replicas":"two","handler":"m.f"}`,
		`{"transport":"rabbitmq","workload":{"template":{"spec":{"containers":"none"}}},"timeout":{"processing":5}}`,
		`{"actor":"a","resources":{"limits":{"memory":"lots"}}}`,
		`["not","an","object"]`,
	} {
		t.Run(spec, func(t *testing.T) {
			parent := `{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"a","namespace":"ns"},"spec":` + spec + `}`
			actor, specErr, err := DecodeParent(json.RawMessage(parent), nil)
			if err != nil {
				t.Fatal(err)
			}
			var want v1alpha1.AsyncActorSpec
			wantErr := json.Unmarshal([]byte(spec), &want)
			want.AsyaGeneration = actor.Spec.AsyaGeneration
			if diff := cmp.Diff(want.WithDefaults(), actor.Spec); diff != "" {
				t.Errorf("spec differs from encoding/json's (-want +got):\n%s", diff)
			}
			switch {
			case wantErr == nil && specErr != nil:
				t.Errorf("spec error %q, encoding/json decodes it", specErr)
			case wantErr != nil && (specErr == nil || specErr.Error() != "spec: "+wantErr.Error()):
				t.Errorf("spec error %v, want %q", specErr, "spec: "+wantErr.Error())
			}
		})
	}
}
