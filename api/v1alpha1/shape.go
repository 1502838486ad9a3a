package v1alpha1

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	jsonv1 "github.com/go-json-experiment/json/v1"
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

// The shape rule: the fields only one shape has, at the top of the spec
// and, as paths, under spec.scaling. The shared lists name the fields
// both shapes have, which tell nothing; with them every JSON field of
// AsyncActorSpec and ScalingSpec is in exactly one list (shape_test.go
// holds the lists to the structs). The CRD's CEL rules (types.go) say
// the same for admission: shape_cel_test.go evaluates them against a spec
// carrying each field of the CRD and compares their verdict with ShapeOf's.
var (
	nestedFields = []string{"workload", "timeout"}
	flatFields   = append([]string{"actor", "image", "handler", "imagePullPolicy", "pythonExecutable", "replicas", "env",
		"resources", "nodeSelector", "tolerations", "volumes", "volumeMounts", "initContainers", "sidecars",
		"resiliency", "tracing", "secretRefs", "stateProxy", "flavors"}, claimFields...)
	// claimFields are Crossplane's (ClaimFields): only an upstream claim
	// has them, so they are flat; asya-sync reads of them only the
	// composition's transport (ClaimFields.CompositionTransport).
	claimFields = []string{"compositionRef", "compositionRevisionRef", "compositionRevisionSelector",
		"compositionSelector", "compositionUpdatePolicy", "compositeDeletePolicy", "resourceRef",
		"writeConnectionSecretToRef", "publishConnectionDetailsTo"}
	sharedFields = []string{"transport", "sidecar", "scaling"}

	// advanced.triggers is the 0.3 shape's: the flat shape's triggers are
	// additionalTriggers, which flatModel writes over advanced.triggers,
	// so a flat actor's own advanced.triggers would be dropped unseen.
	nestedScaling = []string{"minReplicas", "maxReplicas", "advanced.triggers"}
	flatScaling   = []string{"minReplicaCount", "maxReplicaCount", "additionalTriggers"}
	sharedScaling = []string{"enabled", "pollingInterval", "cooldownPeriod", "queueLength", "advanced",
		"advanced.formula", "advanced.target", "advanced.activationTarget", "advanced.metricType",
		"advanced.restoreToOriginalReplicaCount"}
)

// FlatFields are the fields at the top of a flat spec.
func FlatFields() []string { return append(slices.Clone(flatFields), sharedFields...) }

// ShapeOf tells the generation of a spec from its fields, and refuses a
// spec that mixes the two shapes, naming the fields of each.
func ShapeOf(spec json.RawMessage) (Generation, error) {
	// Read as encoding/json reads it, on its faster v2 implementation: a
	// spec is read on every sync, and its errors are the decode's to tell.
	var top map[string]json.RawMessage
	if err := jsonv1.Unmarshal(spec, &top); err != nil {
		return Nested, err
	}
	scaling := object(top["scaling"]) // a bad scaling fails the decode itself
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

// present are the paths of names that m has, sorted, each after prefix.
func present(m map[string]json.RawMessage, names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if has(m, n) {
			out = append(out, prefix+n)
		}
	}
	slices.Sort(out)
	return out
}

// has reports whether m has the field at path ("advanced.triggers"), as
// CEL's has() does: every object on the way must be there. Only the
// objects on the way are decoded, one level at a time, so that a spec's
// lists and values are never built.
func has(m map[string]json.RawMessage, path string) bool {
	for {
		head, rest, deeper := strings.Cut(path, ".")
		v, ok := m[head]
		if !ok || !deeper {
			return ok
		}
		if m = object(v); m == nil {
			return false
		}
		path = rest
	}
}

// object is raw decoded one level deep, or nil when it is not an object.
func object(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if jsonv1.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}
