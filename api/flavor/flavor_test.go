package flavor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

var fields = []string{"image", "env", "resources", "nodeSelector", "tolerations", "stateProxy", "sidecar", "scaling", "actor", "transport", "flavors"}

func TestApply(t *testing.T) {
	found := Found{
		"gpu": json.RawMessage(`{"resources":{"limits":{"nvidia.com/gpu":"1"}},"nodeSelector":{"gpu":"l4"},
			"tolerations":[{"key":"gpu"}],"env":[{"name":"A","value":"1"}]}`),
		"cpu":      json.RawMessage(`{"resources":{"requests":{"cpu":"2"}},"nodeSelector":{"zone":"a"},"env":[{"name":"B","value":"2"}]}`),
		"same-gpu": json.RawMessage(`{"nodeSelector":{"gpu":"a100"}}`),
		"list-env": json.RawMessage(`{"tolerations":{"key":"x"}}`),
		"infra":    json.RawMessage(`{"actor":"other","transport":"sqs","flavors":["gpu"],"image":"i:2"}`),
		"empty":    nil,
		"typo":     json.RawMessage(`{"statProxy":[],"env":[]}`),
		"not-map":  json.RawMessage(`["a"]`),
	}
	tests := []struct {
		name, spec, want, err string
	}{
		{name: "no flavors: the spec as it is", spec: `{"actor":"a","image":"i:1"}`, want: `{"actor":"a","image":"i:1"}`},
		{name: "lists appended in the order listed, maps merged key by key",
			spec: `{"actor":"a","flavors":["gpu","cpu"]}`,
			want: `{"actor":"a","flavors":["gpu","cpu"],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
				"nodeSelector":{"gpu":"l4","zone":"a"},"resources":{"limits":{"nvidia.com/gpu":"1"},"requests":{"cpu":"2"}},
				"tolerations":[{"key":"gpu"}]}`},
		{name: "the other order appends the other way",
			spec: `{"flavors":["cpu","gpu"]}`,
			want: `{"flavors":["cpu","gpu"],"env":[{"name":"B","value":"2"},{"name":"A","value":"1"}],
				"nodeSelector":{"gpu":"l4","zone":"a"},"resources":{"limits":{"nvidia.com/gpu":"1"},"requests":{"cpu":"2"}},
				"tolerations":[{"key":"gpu"}]}`},
		{name: "the actor's own field replaces the flavors' whole value",
			spec: `{"flavors":["gpu","cpu"],"env":[{"name":"C"}],"nodeSelector":{"x":"y"}}`,
			want: `{"flavors":["gpu","cpu"],"env":[{"name":"C"}],"nodeSelector":{"x":"y"},
				"resources":{"limits":{"nvidia.com/gpu":"1"},"requests":{"cpu":"2"}},"tolerations":[{"key":"gpu"}]}`},
		{name: "actor, transport and flavors are the actor's alone",
			spec: `{"actor":"a","flavors":["infra"]}`, want: `{"actor":"a","flavors":["infra"],"image":"i:2"}`},
		{name: "a flavor without data merges nothing", spec: `{"flavors":["empty"],"image":"i"}`, want: `{"flavors":["empty"],"image":"i"}`},
		{name: "two flavors setting one value conflict", spec: `{"flavors":["gpu","same-gpu"]}`,
			err: `flavors "gpu" and "same-gpu" both set nodeSelector.gpu`},
		{name: "a list against an object conflicts", spec: `{"flavors":["gpu","list-env"]}`,
			err: `flavors "gpu" and "list-env" disagree on tolerations: "gpu" has a list, "list-env" an object`},
		{name: "a missing flavor is named", spec: `{"flavors":["gpu","gone","lost"]}`,
			err: `spec.flavors: no EnvironmentConfig "gone", "lost"`},
		{name: "a field the spec does not have is named", spec: `{"flavors":["typo"]}`,
			err: `EnvironmentConfig "typo": data.statProxy: not a field`},
		{name: "data that is not an object", spec: `{"flavors":["not-map"]}`, err: `EnvironmentConfig "not-map": data:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var named struct{ Flavors []string }
			if err := json.Unmarshal([]byte(tt.spec), &named); err != nil {
				t.Fatal(err)
			}
			got, err := Apply(json.RawMessage(tt.spec), named.Flavors, found, fields)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &w); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("merged spec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMergeLeavesFlavorsAlone: a flavor's data is shared by every actor
// naming it, so merging one actor must not change it for the next.
func TestMergeLeavesFlavorsAlone(t *testing.T) {
	a := map[string]any{"env": []any{"a"}, "resources": map[string]any{"limits": map[string]any{"cpu": "1"}}}
	b := map[string]any{"env": []any{"b"}, "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}}
	if _, err := Merge([]string{"a", "b"}, []map[string]any{a, b}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"env": []any{"a"}, "resources": map[string]any{"limits": map[string]any{"cpu": "1"}}}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("first flavor changed (-want +got):\n%s", diff)
	}
}
