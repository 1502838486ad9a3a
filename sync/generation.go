package sync

import (
	"fmt"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/status"
)

// generation is what a hook call does differently for each Asya
// generation: how a spec is validated, and what the service configuration
// completes in it. What its children and status have of their own is in
// children/ and status/, each behind a seam like this one.
type generation interface {
	// validate lists what is wrong with a defaulted spec, each problem
	// naming the container or field.
	validate(name string, spec v1alpha1.AsyncActorSpec, t config.Transport) []string
	// transport is the name of the configured transport the actor runs
	// on: its spec.transport, or what the generation decides for one that
	// names none. refused, when not nil, is why the actor runs on none.
	transport(spec v1alpha1.AsyncActorSpec, cfg *config.Config) (name string, refused *status.QueueState)
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

// transport: spec.transport, which the 0.3 shape requires.
func (nested) transport(spec v1alpha1.AsyncActorSpec, _ *config.Config) (string, *status.QueueState) {
	return spec.Transport, nil
}

// flat is upstream Asya 0.5+ and 1.x (validate_flat.go).
type flat struct{}

// transport: a claim's Crossplane composition decided upstream's transport
// (ClaimFields.CompositionTransport), whatever spec.transport says, and
// upstream's XRD defaults spec.transport to sqs, so a claim that ran on
// RabbitMQ may say sqs. asya-sync cannot tell a defaulted spec.transport
// from a written one: when both name a transport and they differ, the
// actor is refused, since running it on either could leave its messages
// on the other broker (docs/design.md#two-generations). Without a
// composition, spec.transport, else flatActors.transport (upstream 1.x
// picks the transport per installation, not per actor).
func (flat) transport(spec v1alpha1.AsyncActorSpec, cfg *config.Config) (string, *status.QueueState) {
	kind, field := spec.CompositionTransport()
	switch {
	case kind == "" && spec.Transport != "":
		return spec.Transport, nil
	case kind == "":
		return cfg.FlatActors.Transport, nil
	}
	named, notFound := transportOfType(cfg, kind, field)
	switch {
	case spec.Transport == "" && notFound != nil:
		return "", notFound
	case spec.Transport == "":
		return named, nil
	case spec.Transport == named:
		return named, nil
	}
	if t, ok := cfg.Transports[spec.Transport]; ok && t.Kind.Type() == kind {
		return spec.Transport, nil // one of several transports of the composition's type
	}
	value := kind
	if field == "spec.compositionRef.name" {
		value = v1alpha1.CompositionPrefix + kind
	}
	return spec.Transport, &status.QueueState{Reason: "TransportConflict", Message: fmt.Sprintf(
		"spec.transport %q and %s %q name different transports: the composition ran this claim on %s, and "+
			"spec.transport may be upstream's XRD default (sqs) rather than a choice; running it on either could leave "+
			"its messages on the other broker, so it runs on neither and no queue is touched: remove spec.transport "+
			"to keep the composition's transport, or remove spec.compositionRef and spec.compositionSelector to run "+
			"on %q, or make them name one transport",
		spec.Transport, field, value, kind, spec.Transport)}
}

// transportOfType is the configured transport that runs a composition's
// transport type: the one of that name, else the only enabled one of that
// type; when none can, the status says what to configure.
func transportOfType(cfg *config.Config, kind, field string) (string, *status.QueueState) {
	if t, ok := cfg.Transports[kind]; ok {
		if !t.Enabled {
			return "", &status.QueueState{Reason: "TransportDisabled", Message: fmt.Sprintf(
				"%s: the composition ran this claim on %s, and transport %q is disabled in the service configuration",
				field, kind, kind)}
		}
		return kind, nil
	}
	var ofType []string
	for _, name := range cfg.EnabledNames() {
		if cfg.Transports[name].Kind.Type() == kind {
			ofType = append(ofType, name)
		}
	}
	switch len(ofType) {
	case 1:
		return ofType[0], nil
	case 0:
		return "", &status.QueueState{Reason: "TransportNotFound", Message: fmt.Sprintf(
			"%s: the composition ran this claim on %s, and no transport is named %q nor is any enabled one of type %q "+
				"(configured: %v): configure the broker the composition used as transports.%s with type: %s",
			field, kind, kind, kind, cfg.TransportNames(), kind, kind)}
	}
	return "", &status.QueueState{Reason: "TransportNotFound", Message: fmt.Sprintf(
		"%s: the composition ran this claim on %s, no transport is named %q, and several enabled ones have type %q %v: "+
			"set spec.transport to the one the composition used", field, kind, kind, kind, ofType)}
}
