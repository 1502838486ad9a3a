package v1alpha1

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Generation is the Asya generation an actor is written for. The shape of
// its spec tells which; ShapeOf is the one place that decides.
type Generation int

const (
	// Nested is Asya 0.3: transport, workload, timeout, sidecar, scaling;
	// the sidecar talks to the runtime in length-prefixed frames and the
	// queue is asya-<name>.
	Nested Generation = iota
	// Flat is upstream Asya 0.5+ and 1.x: actor, image, handler, ...; the
	// sidecar talks HTTP to the runtime and the queue is
	// asya-<namespace>-<actor>.
	Flat
)

func (g Generation) String() string {
	if g == Flat {
		return "flat"
	}
	return "nested"
}

// The top-level fields only one shape has; transport, sidecar and scaling
// are in both. The CRD's CEL rules (types.go) name the same fields.
var (
	nestedFields = []string{"workload", "timeout"}
	flatFields   = append([]string{"actor", "image", "handler", "imagePullPolicy", "pythonExecutable", "replicas", "env",
		"resources", "nodeSelector", "tolerations", "volumes", "volumeMounts", "initContainers", "sidecars",
		"resiliency", "tracing", "secretRefs", "stateProxy", "flavors"}, claimFields...)
	// claimFields are Crossplane's (ClaimFields): only an upstream claim
	// has them, so they are flat, though asya-sync ignores them.
	claimFields = []string{"compositionRef", "compositionRevisionRef", "compositionRevisionSelector",
		"compositionSelector", "compositionUpdatePolicy", "compositeDeletePolicy", "resourceRef",
		"writeConnectionSecretToRef", "publishConnectionDetailsTo"}
	nestedScaling = []string{"minReplicas", "maxReplicas"}
	flatScaling   = []string{"minReplicaCount", "maxReplicaCount", "additionalTriggers"}
)

// ShapeOf tells the generation of a spec from its fields, and refuses a
// spec that mixes the two shapes, naming the fields of each.
func ShapeOf(spec json.RawMessage) (Generation, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(spec, &top); err != nil {
		return Nested, err
	}
	var scaling map[string]json.RawMessage
	_ = json.Unmarshal(top["scaling"], &scaling) // a bad scaling fails the decode itself
	return shape(top, scaling)
}

// ShapeOfObject is ShapeOf for a spec already decoded, as the related
// actors Metacontroller sends come (transport.Owner).
func ShapeOfObject(spec map[string]any) (Generation, error) {
	scaling, _ := spec["scaling"].(map[string]any)
	return shape(spec, scaling)
}

func shape[V any](top, scaling map[string]V) (Generation, error) {
	nested := append(present(top, nestedFields, ""), present(scaling, nestedScaling, "scaling.")...)
	flat := append(present(top, flatFields, ""), present(scaling, flatScaling, "scaling.")...)
	switch {
	case len(nested) > 0 && len(flat) > 0:
		return Nested, fmt.Errorf("spec mixes two shapes: %s of the nested 0.3 shape and %s of the flat shape; use one",
			strings.Join(nested, ", "), strings.Join(flat, ", "))
	case len(flat) > 0:
		return Flat, nil
	}
	return Nested, nil
}

func present[V any](m map[string]V, names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if _, ok := m[n]; ok {
			out = append(out, prefix+n)
		}
	}
	slices.Sort(out)
	return out
}
