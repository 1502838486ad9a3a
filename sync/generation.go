package sync

import (
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
)

// generation is what a hook call does differently for each Asya
// generation: how a spec is validated, and what the service configuration
// completes in it. What its children and status have of their own is in
// children/ and status/, each behind a seam like this one.
type generation interface {
	// validate lists what is wrong with a defaulted spec, each problem
	// naming the container or field.
	validate(name string, spec v1alpha1.AsyncActorSpec, t config.Transport) []string
	// transport is the transport of an actor that names none.
	transport(cfg *config.Config) string
}

var generations = map[v1alpha1.Generation]generation{
	v1alpha1.Nested: nested{},
	v1alpha1.Flat:   flat{},
}

func generationOf(actor *v1alpha1.AsyncActor) generation {
	return generations[actor.Spec.AsyaGeneration]
}

// nested is Asya 0.3 (validate.go).
type nested struct{}

// transport: none; the 0.3 shape requires spec.transport.
func (nested) transport(*config.Config) string { return "" }

// flat is upstream Asya 0.5+ and 1.x (validate_flat.go).
type flat struct{}

// transport: upstream 1.x picks the transport per installation, not per
// actor: flatActors.transport.
func (flat) transport(cfg *config.Config) string { return cfg.FlatActors.Transport }
