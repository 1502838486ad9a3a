package hook

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// parentShell is the parent with its spec left raw: metadata and status
// must decode for a request to be answered at all, while a spec that does
// not decode is a problem of the actor, reported in its status.
type parentShell struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              json.RawMessage           `json:"spec"`
	Status            v1alpha1.AsyncActorStatus `json:"status"`
}

func decodeShell(raw json.RawMessage) (*parentShell, error) {
	var shell parentShell
	if err := json.Unmarshal(raw, &shell); err != nil {
		return nil, fmt.Errorf("parent: %w", err)
	}
	return &shell, nil
}

// DecodeParent splits the parent into the actor and a spec error. The actor
// always carries metadata and status; a spec that does not decode is a
// problem of the actor, reported in its status, not of the request.
func DecodeParent(raw json.RawMessage) (*v1alpha1.AsyncActor, error) {
	shell, err := decodeShell(raw)
	if err != nil {
		return nil, err
	}
	actor := &v1alpha1.AsyncActor{TypeMeta: shell.TypeMeta, ObjectMeta: shell.ObjectMeta, Status: shell.Status}
	if len(shell.Spec) == 0 || string(shell.Spec) == "null" {
		return actor, fmt.Errorf("spec: required")
	}
	if err := json.Unmarshal(shell.Spec, &actor.Spec); err != nil {
		return actor, fmt.Errorf("spec: %w", err)
	}
	return actor, nil
}
