// Package hook holds Metacontroller's CompositeController hook protocol:
// the requests asya-sync receives and the responses it returns.
package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Request is a sync or finalize request.
type Request struct {
	Controller json.RawMessage `json:"controller,omitempty"`
	Parent     json.RawMessage `json:"parent"`
	Children   Objects         `json:"children,omitempty"`
	Related    Objects         `json:"related,omitempty"`
	Finalizing bool            `json:"finalizing,omitempty"`
}

// Response is a sync or finalize response. Children is always a list, never
// null: an absent list would delete every child.
type Response struct {
	Status             *v1alpha1.AsyncActorStatus `json:"status"`
	Children           []map[string]any           `json:"children"`
	ResyncAfterSeconds float64                    `json:"resyncAfterSeconds,omitempty"`
	Finalized          bool                       `json:"finalized,omitempty"`
}

// CustomizeRequest asks which related objects a parent needs.
type CustomizeRequest struct {
	Controller json.RawMessage `json:"controller,omitempty"`
	Parent     json.RawMessage `json:"parent"`
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

// Objects maps "<Kind>.<apiVersion>" to objects keyed by name (hook v1) or
// "namespace/name" (hook v2).
type Objects map[string]map[string]*unstructured.Unstructured

// GroupKey is the key Metacontroller uses for a kind of object.
func GroupKey(kind, apiVersion string) string { return kind + "." + apiVersion }

// HasGroup reports whether Metacontroller sent the group at all, even empty.
// It always sends one for every child resource the controller manages.
func (o Objects) HasGroup(kind, apiVersion string) bool {
	_, ok := o[GroupKey(kind, apiVersion)]
	return ok
}

// KeyedByName reports whether any object of the group is keyed by its bare
// name (hook version v1), where objects of one name in different
// namespaces overwrite each other.
func (o Objects) KeyedByName(kind, apiVersion string) bool {
	for key := range o[GroupKey(kind, apiVersion)] {
		if !strings.Contains(key, "/") {
			return true
		}
	}
	return false
}

// List returns the objects of one group, sorted by namespace and name.
func (o Objects) List(kind, apiVersion string) []*unstructured.Unstructured {
	group := o[GroupKey(kind, apiVersion)]
	out := make([]*unstructured.Unstructured, 0, len(group))
	for _, obj := range group {
		if obj != nil {
			out = append(out, obj)
		}
	}
	sortObjects(out)
	return out
}

// All returns every object of every group, sorted by group, namespace and name.
func (o Objects) All() []*unstructured.Unstructured {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*unstructured.Unstructured
	for _, k := range keys {
		group := make([]*unstructured.Unstructured, 0, len(o[k]))
		for _, obj := range o[k] {
			if obj != nil {
				group = append(group, obj)
			}
		}
		sortObjects(group)
		out = append(out, group...)
	}
	return out
}

// Get returns the object of the group with the given name, or nil.
func (o Objects) Get(kind, apiVersion, name string) *unstructured.Unstructured {
	for _, obj := range o.List(kind, apiVersion) {
		if obj.GetName() == name {
			return obj
		}
	}
	return nil
}

// Decode converts an observed object into its typed form.
func Decode[T any](obj *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return out, nil
}

func sortObjects(objs []*unstructured.Unstructured) {
	sort.Slice(objs, func(i, j int) bool {
		if objs[i].GetNamespace() != objs[j].GetNamespace() {
			return objs[i].GetNamespace() < objs[j].GetNamespace()
		}
		return objs[i].GetName() < objs[j].GetName()
	})
}

// DecodeRequest parses a sync or finalize request body. Its errors describe
// a malformed request, which the HTTP layer answers with 400.
func DecodeRequest(body []byte) (*Request, error) {
	var req Request
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	if _, err := checkParent(req.Parent); err != nil {
		return nil, err
	}
	return &req, nil
}

// DecodeCustomizeRequest parses a customize request body.
func DecodeCustomizeRequest(body []byte) (*CustomizeRequest, error) {
	var req CustomizeRequest
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	if _, err := checkParent(req.Parent); err != nil {
		return nil, err
	}
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
	if err := json.Unmarshal(trimmed, into); err != nil {
		return fmt.Errorf("invalid request JSON: %w", err)
	}
	return nil
}

// parentMeta is what checkParent reads of the parent.
type parentMeta struct {
	Namespace string
	Name      string
}

// checkParent accepts only an AsyncActor with a name whose metadata and
// status decode: an actor without them cannot be answered at all (a bad
// spec, in contrast, goes into its status, so it is not decoded here).
func checkParent(raw json.RawMessage) (parentMeta, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return parentMeta{}, errors.New("request has no parent")
	}
	actor, err := decodeShell(raw)
	if err != nil {
		return parentMeta{}, err
	}
	want := v1alpha1.GroupVersion.String()
	if actor.Kind != v1alpha1.Kind || actor.APIVersion != want {
		return parentMeta{}, fmt.Errorf("parent is %s %q, want %s %q", actor.APIVersion, actor.Kind, want, v1alpha1.Kind)
	}
	if actor.Name == "" {
		return parentMeta{}, errors.New("parent has no metadata.name")
	}
	return parentMeta{Namespace: actor.Namespace, Name: actor.Name}, nil
}

// Child renders a desired child the way kubectl apply input looks: no
// status and no server-set metadata.
func Child(obj runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return m, nil
}
