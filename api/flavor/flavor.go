// Package flavor merges an actor's flavors into its spec, as upstream
// Asya's flavor function (src/function-asya-flavors at a7cec2a) merges
// them under Crossplane: the named flavors' data in the order the actor
// lists them, lists appended, maps merged key by key, a scalar set by two
// flavors a conflict; then the actor's own fields over the result, each
// replacing the flavors' whole value. The actor, transport and flavors
// fields are the actor's alone.
package flavor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Kind, APIVersion and Resource name the objects a flavor is: Crossplane's
// EnvironmentConfig, whose data is a partial actor spec.
const (
	Kind       = "EnvironmentConfig"
	APIVersion = "apiextensions.crossplane.io/v1beta1"
	Resource   = "environmentconfigs"
)

// Label marks an EnvironmentConfig as a flavor, as upstream's charts label
// theirs. Flavors are looked up by name; the label is informative.
const Label = "asya.sh/flavor"

// actorOnly are the fields a flavor cannot set.
var actorOnly = []string{"actor", "transport", "flavors"}

// Found are the flavors that exist, by name: each one's data, null when
// it has none.
type Found map[string]json.RawMessage

// Apply returns spec with the flavors it names (its decoded
// spec.flavors) merged in. fields are the names a flavor's data may hold
// at its top (a spec's own): any other is a problem, as is a flavor that
// is not found or does not merge.
func Apply(spec json.RawMessage, names []string, found Found, fields []string) (json.RawMessage, error) {
	if len(names) == 0 {
		return spec, nil
	}
	var actor map[string]any
	if err := json.Unmarshal(spec, &actor); err != nil {
		return nil, err
	}
	data, err := dataOf(names, found, fields)
	if err != nil {
		return nil, err
	}
	merged, err := Merge(names, data)
	if err != nil {
		return nil, err
	}
	for _, f := range actorOnly {
		delete(merged, f)
	}
	for k, v := range actor {
		merged[k] = v
	}
	return json.Marshal(merged)
}

// dataOf decodes each named flavor's data; a flavor without data merges
// nothing, as upstream skips it.
func dataOf(names []string, found Found, fields []string) ([]map[string]any, error) {
	var missing []string
	data := make([]map[string]any, len(names))
	for i, name := range names {
		raw, ok := found[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, &data[i]); err != nil {
			return nil, fmt.Errorf("spec.flavors: %s %q: data: %w", Kind, name, err)
		}
		if err := onlyFields(name, data[i], fields); err != nil {
			return nil, err
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("spec.flavors: no %s %s (%s, cluster-scoped): create it, or remove it from spec.flavors",
			Kind, quoted(missing), APIVersion)
	}
	return data, nil
}

// onlyFields refuses what the spec does not have: upstream's API server
// would prune it unseen.
func onlyFields(name string, data map[string]any, fields []string) error {
	var unknown []string
	for k := range data {
		if !slices.Contains(fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("spec.flavors: %s %q: data.%s: not a field of an actor's spec", Kind, name, strings.Join(unknown, ", data."))
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Merge merges the flavors' data in order: a field of one flavor is taken
// as it is; a field of two is merged by its type, lists appended and maps
// merged key by key, and two values of another type, or of different
// types, are a conflict that names both flavors. A nil data merges nothing.
func Merge(names []string, data []map[string]any) (map[string]any, error) {
	merged := map[string]any{}
	first := map[string]string{} // field: the flavor that set it first
	for i, d := range data {
		for k, v := range d {
			have, ok := merged[k]
			if !ok {
				merged[k], first[k] = v, names[i]
				continue
			}
			m, err := mergeValues(first[k], names[i], k, have, v)
			if err != nil {
				return nil, err
			}
			merged[k] = m
		}
	}
	return merged, nil
}

func mergeValues(a, b, path string, x, y any) (any, error) {
	switch xv := x.(type) {
	case []any:
		yv, ok := y.([]any)
		if !ok {
			return nil, conflict(a, b, path, "a list", y)
		}
		return append(slices.Clone(xv), yv...), nil
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok {
			return nil, conflict(a, b, path, "an object", y)
		}
		out := make(map[string]any, len(xv)+len(yv))
		for k, v := range xv {
			out[k] = v
		}
		for k, v := range yv {
			have, ok := out[k]
			if !ok {
				out[k] = v
				continue
			}
			m, err := mergeValues(a, b, path+"."+k, have, v)
			if err != nil {
				return nil, err
			}
			out[k] = m
		}
		return out, nil
	}
	return nil, fmt.Errorf("spec.flavors: flavors %q and %q both set %s: one flavor may set a value; move it to one of them or into the actor", a, b, path)
}

func conflict(a, b, path, was string, y any) error {
	return fmt.Errorf("spec.flavors: flavors %q and %q disagree on %s: %q has %s, %q %s", a, b, path, a, was, b, kindOf(y))
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a value"
}
