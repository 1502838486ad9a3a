// Package jsonfields reads Go structs as their JSON form: the members
// encoding/json writes for a struct, by name, and the values behind them,
// without writing the JSON.
package jsonfields

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Field is a struct field by its JSON name, embedded structs' fields
// promoted.
type Field struct {
	Name  string
	index []int
	// Nested: the field's values can hold a JSON object or list.
	Nested              bool
	omitEmpty, omitZero bool
	isZero              func(reflect.Value) bool // omitzero's test for the field's type
}

// Type is how encoding/json writes values of a Go type.
type Type struct {
	// Marshals: the values write their own JSON (a MarshalJSON method).
	Marshals bool
	// Fields are a struct's members, in encoding/json's order.
	Fields []Field
}

var cache sync.Map // reflect.Type -> *Type

// Of is how encoding/json writes values of type t.
func Of(t reflect.Type) *Type {
	if c, ok := cache.Load(t); ok {
		return c.(*Type)
	}
	c := &Type{Marshals: marshals(t)}
	if t.Kind() == reflect.Struct && !c.Marshals {
		c.Fields = add(nil, t, nil)
	}
	cache.Store(t, c)
	return c
}

// add adds t's fields as encoding/json names them: the tag's name, else
// the Go name; an embedded struct without a name has its fields promoted.
func add(fields []Field, t reflect.Type, index []int) []Field {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _ := sf.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		at := append(append([]int(nil), index...), i)
		switch {
		case tag == "-":
		case sf.Anonymous && name == "" && embedsStruct(sf.Type):
			fields = add(fields, deref(sf.Type), at)
		case !sf.IsExported():
		default:
			if name == "" {
				name = sf.Name
			}
			fields = append(fields, Field{Name: name, index: at, Nested: nests(sf.Type),
				omitEmpty: hasOpt(opts, "omitempty"), omitZero: hasOpt(opts, "omitzero"), isZero: zeroTest(sf.Type)})
		}
	}
	return fields
}

// Value is the field of struct value v, and whether encoding/json writes
// it (not when omitempty or omitzero leave it out, or it is in a nil
// embedded struct).
func (f Field) Value(v reflect.Value) (reflect.Value, bool) {
	fv, err := v.FieldByIndexErr(f.index)
	if err != nil || f.omitZero && f.isZero(fv) || f.omitEmpty && isEmpty(fv) {
		return reflect.Value{}, false
	}
	return fv, true
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// marshals: values of type t write their own JSON.
func marshals(t reflect.Type) bool {
	return t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
}

func hasOpt(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func embedsStruct(t reflect.Type) bool { return deref(t).Kind() == reflect.Struct }

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// nests: a value of type t can hold a JSON object or list. It reads t
// alone, not t's fields, so that a type holding itself ends.
func nests(t reflect.Type) bool {
	t = deref(t)
	if marshals(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Interface, reflect.Slice, reflect.Array:
		return true
	case reflect.Map:
		return nests(t.Elem())
	}
	return false
}

// isEmpty is omitempty's test: false, 0, a nil pointer or interface, an
// empty array, slice, map or string; never a struct.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}

type zeroer interface{ IsZero() bool }

var zeroerType = reflect.TypeFor[zeroer]()

// zeroTest is omitzero's test for values of t: their IsZero method (a nil
// pointer is zero), else whether they are the zero value.
func zeroTest(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Implements(zeroerType):
		return func(v reflect.Value) bool {
			return v.Kind() == reflect.Pointer && v.IsNil() || v.Interface().(zeroer).IsZero()
		}
	case reflect.PointerTo(t).Implements(zeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() { // not from a struct reached through a pointer: copy it
				p := reflect.New(t)
				p.Elem().Set(v)
				v = p.Elem()
			}
			return v.Addr().Interface().(zeroer).IsZero()
		}
	}
	return reflect.Value.IsZero
}
