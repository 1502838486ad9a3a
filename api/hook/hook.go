// Package hook holds Metacontroller's CompositeController hook protocol:
// the requests asya-sync receives and the responses it returns.
package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Response is a sync or finalize response. Children is always a list, never
// null: an absent list would delete every child.
type Response struct {
	Status             *v1alpha1.AsyncActorStatus `json:"status"`
	Children           []Child                    `json:"children"`
	ResyncAfterSeconds float64                    `json:"resyncAfterSeconds,omitempty"`
	Finalized          bool                       `json:"finalized,omitempty"`
}

// CustomizeRequest asks which related objects a parent needs.
type CustomizeRequest struct {
	Parent json.RawMessage `json:"parent"`
	// Actor is the parent, decoded and defaulted.
	Actor *v1alpha1.AsyncActor `json:"-"`
}

// CustomizeResponse lists the related objects to send with each sync.
type CustomizeResponse struct {
	RelatedResources []RelatedResourceRule `json:"relatedResources"`
}

// RelatedResourceRule selects related objects by label or by name.
type RelatedResourceRule struct {
	APIVersion    string         `json:"apiVersion"`
	Resource      string         `json:"resource"`
	LabelSelector *LabelSelector `json:"labelSelector,omitempty"`
	Namespace     string         `json:"namespace,omitempty"`
	Names         []string       `json:"names,omitempty"`
}

// LabelSelector is the matchLabels form of a label selector.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// DecodeCustomizeRequest parses a customize request body.
func DecodeCustomizeRequest(body []byte) (*CustomizeRequest, error) {
	var req CustomizeRequest
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	actor, _, err := DecodeParent(req.Parent, nil)
	if err != nil {
		return nil, err
	}
	req.Actor = actor
	return &req, nil
}

func decodeObject(body []byte, into any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return errors.New("empty request body")
	}
	if trimmed[0] != '{' {
		return errors.New("request body is not a JSON object")
	}
	if err := unmarshal(trimmed, into); err != nil {
		return fmt.Errorf("invalid request JSON: %w", err)
	}
	return nil
}
