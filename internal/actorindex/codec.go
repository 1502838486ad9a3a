package actorindex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"

	"github.com/asya-sh/asya-sync/api/hook"
)

// The index reads the API server's answers itself: each actor of a list
// or a watch event is decoded straight into an entry, reading what a
// claimant reads and skipping the rest (managedFields, status) without
// building it (hook.DecodeWatchedActor). The dynamic client built every
// field of every event into maps, in four passes over its bytes: a
// quarter of the service's CPU while a fleet is deleted
// (docs/performance.md).
var negotiated = runtime.NewSimpleNegotiatedSerializer(runtime.SerializerInfo{
	MediaType:        "application/json",
	MediaTypeType:    "application",
	MediaTypeSubType: "json",
	EncodesAsText:    true,
	Serializer:       objects{},
	StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: events{}, Framer: jsonserializer.Framer},
})

// objects decodes an actor, a list of actors, or a Status (an error).
type objects struct{ decodeOnly }

func (objects) Decode(data []byte, _ *schema.GroupVersionKind, _ runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	kind, err := kindOf(data)
	if err != nil {
		return nil, nil, err
	}
	switch kind {
	case "Status":
		var status metav1.Status
		if err := json.Unmarshal(data, &status); err != nil {
			return nil, nil, err
		}
		return &status, nil, nil
	case "AsyncActorList":
		items, meta, err := hook.DecodeWatchedActorList(data)
		if err != nil {
			return nil, nil, err
		}
		list := &entryList{ListMeta: meta, Items: make([]*entry, len(items))}
		for i, a := range items {
			list.Items[i] = entryFor(a)
		}
		return list, nil, nil
	default:
		a, err := hook.DecodeWatchedActor(data)
		if err != nil {
			return nil, nil, err
		}
		return entryFor(a), nil, nil
	}
}

// events decodes a watch event's envelope, leaving its object raw for
// objects to decode.
type events struct{ decodeOnly }

func (events) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	event, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("a watch event decodes into a *metav1.WatchEvent, not %T", into)
	}
	var envelope struct {
		Type   string         `json:"type"`
		Object jsontext.Value `json:"object"`
	}
	if err := jsonv2.Unmarshal(data, &envelope); err != nil {
		return nil, nil, fmt.Errorf("decode watch event: %w", err)
	}
	event.Type, event.Object = envelope.Type, runtime.RawExtension{Raw: envelope.Object}
	return event, nil, nil
}

// kindOf reads the object's kind without reading past it: the API server
// writes an object's second, after apiVersion (a list's after its items).
func kindOf(data []byte) (string, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", errors.New("not a JSON object")
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return "", err
		}
		if name.String() == "kind" {
			value, err := dec.ReadToken()
			return value.String(), err
		}
		if err := dec.SkipValue(); err != nil {
			return "", err
		}
	}
	return "", nil
}

// decodeOnly is a runtime.Serializer that only decodes: the index sends
// no bodies.
type decodeOnly struct{}

func (decodeOnly) Encode(runtime.Object, io.Writer) error {
	return errors.New("the actor index encodes nothing")
}

func (decodeOnly) Identifier() runtime.Identifier { return "asya-sync-actorindex" }

// entryList is a page of a list of the actors.
type entryList struct {
	metav1.ListMeta
	Items []*entry
}

func (l *entryList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject is the list itself: it is never changed once made.
func (l *entryList) DeepCopyObject() runtime.Object { return l }
