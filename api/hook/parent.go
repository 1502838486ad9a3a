package hook

import (
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/flavor"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// parentShell is the parent with its spec left raw: metadata and status
// must decode for a request to be answered at all, while a spec that does
// not decode is a problem of the actor, reported in its status.
type parentShell struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        parentMeta                `json:"metadata"`
	Spec            json.RawMessage           `json:"spec"`
	Status          v1alpha1.AsyncActorStatus `json:"status"`
}

// parentMeta is the parent's metadata but its managedFields, which no hook
// reads and the API server fills with an entry per writer: read past, as
// the children's are.
type parentMeta struct {
	metav1.ObjectMeta
	ManagedFields skipped `json:"managedFields"`
}

// DecodeParent is the one decode step of an AsyncActor, for every hook
// and for render. The flavors the spec names are merged into it from
// found (api/flavor); a nil found merges none, for the customize hook,
// which reads only their names. err means the parent cannot be answered
// at all: it is missing, not an AsyncActor, unnamed, or its metadata or
// status do not decode. Otherwise actor is set, with its spec defaulted, and specErr says
// whether the spec decoded: a spec that does not is a problem of the actor,
// reported in its status, not of the request.
func DecodeParent(raw json.RawMessage, found flavor.Found) (actor *v1alpha1.AsyncActor, specErr, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, errors.New("request has no parent")
	}
	var shell parentShell
	if err := unmarshalV1(raw, &shell); err != nil {
		return nil, nil, fmt.Errorf("parent: %w", err)
	}
	want := v1alpha1.GroupVersion.String()
	if shell.Kind != v1alpha1.Kind || shell.APIVersion != want {
		return nil, nil, fmt.Errorf("parent is %s %q, want %s %q", shell.APIVersion, shell.Kind, want, v1alpha1.Kind)
	}
	if shell.Metadata.Name == "" {
		return nil, nil, errors.New("parent has no metadata.name")
	}
	actor = &v1alpha1.AsyncActor{TypeMeta: shell.TypeMeta, ObjectMeta: shell.Metadata.ObjectMeta, Status: shell.Status}
	specErr = decodeSpec(shell.Spec, found, &actor.Spec)
	actor.Spec = actor.Spec.WithDefaults()
	return actor, specErr, nil
}

func decodeSpec(raw json.RawMessage, found flavor.Found, spec *v1alpha1.AsyncActorSpec) error {
	if len(raw) == 0 || string(raw) == "null" {
		return errors.New("spec: required")
	}
	if err := decodeShaped(raw, spec); err != nil || found == nil || len(spec.Flavors) == 0 {
		return err
	}
	// A flavor that does not merge leaves the actor's own spec, so that
	// the actor is still known for what it is while its status says why.
	merged, err := flavor.Apply(raw, spec.Flavors, found, v1alpha1.FlatFields())
	if err != nil {
		return err
	}
	var flavored v1alpha1.AsyncActorSpec
	if err := decodeShaped(merged, &flavored); err != nil {
		return fmt.Errorf("with its flavors merged, %w", err)
	}
	*spec = flavored
	return nil
}

// decodeShaped decodes a spec and tells its generation.
func decodeShaped(raw json.RawMessage, spec *v1alpha1.AsyncActorSpec) error {
	gen, shapeErr := v1alpha1.ShapeOf(raw)
	if err := unmarshalSpec(raw, spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	spec.AsyaGeneration = gen
	return shapeErr
}
