package hook

import (
	"encoding/json"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/asya-sh/asya-sync/internal/jsonfields"
)

// Child is a desired child in an answer, as kubectl apply input looks: no
// status and no server-set metadata. Either built from the spec, an API
// object of Go types, or kept as Metacontroller last applied it.
type Child struct {
	built runtime.Object
	kept  map[string]any
}

// Built is a child built from the spec.
func Built(obj runtime.Object) Child { return Child{built: obj} }

// Kept is a child kept as it was last applied.
func Kept(obj map[string]any) Child { return Child{kept: obj} }

// Object is the child as a JSON object.
func (c Child) Object() (map[string]any, error) {
	if c.built == nil {
		return c.kept, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.built)
	if err != nil {
		return nil, err
	}
	withoutServerFields(m)
	// A StatefulSet's claim templates are objects of their own.
	if spec, ok := m["spec"].(map[string]any); ok {
		claims, _ := spec["volumeClaimTemplates"].([]any)
		for _, c := range claims {
			if claim, ok := c.(map[string]any); ok {
				withoutServerFields(claim)
			}
		}
	}
	return m, nil
}

func withoutServerFields(m map[string]any) {
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
}

// MarshalJSONTo writes the child. A built one is written from its Go
// types, as encoding/json writes them but without the status: the
// members Object has, without building them, in about a third of the time
// (docs/performance.md#children-written-from-their-go-types), in the
// order of the Go fields rather than sorted.
func (c Child) MarshalJSONTo(enc *jsontext.Encoder) error {
	if c.built == nil {
		return jsonv2.MarshalEncode(enc, c.kept)
	}
	var opts []jsonv2.Options
	if _, ok := c.built.(*appsv1.StatefulSet); ok {
		opts = append(opts, claimTemplates)
	}
	return writeWithoutStatus(enc, reflect.ValueOf(c.built).Elem(), opts...)
}

// MarshalJSON is MarshalJSONTo for encoding/json.
func (c Child) MarshalJSON() ([]byte, error) { return jsonv1.Marshal(c) }

// UnmarshalJSON reads a child as a kept one.
func (c *Child) UnmarshalJSON(data []byte) error {
	*c = Child{}
	return json.Unmarshal(data, &c.kept)
}

// writeWithoutStatus writes an API object's members but its status.
func writeWithoutStatus(enc *jsontext.Encoder, obj reflect.Value, opts ...jsonv2.Options) error {
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	for _, f := range jsonfields.Of(obj.Type()).Fields {
		v, ok := f.Value(obj)
		if !ok || f.Name == "status" {
			continue
		}
		if err := enc.WriteToken(jsontext.String(f.Name)); err != nil {
			return err
		}
		if err := jsonv2.MarshalEncode(enc, v.Addr().Interface(), opts...); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndObject)
}

// claimTemplates writes a StatefulSet's claim templates, objects of their
// own, without their status.
var claimTemplates = jsonv2.WithMarshalers(jsonv2.MarshalToFunc(func(enc *jsontext.Encoder, claim *corev1.PersistentVolumeClaim) error {
	return writeWithoutStatus(enc, reflect.ValueOf(claim).Elem())
}))
