package dynamicapply

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/asya-sh/asya-sync/internal/jsonfields"
)

// Collision is a list of objects in which two items share the value of
// the key the list is merged by.
type Collision struct {
	Path          string         // where the list is, e.g. spec.template.spec.containers[name=app].ports
	Key           string         // the merge key, e.g. containerPort
	Value         string         // the key's value the two items share, as a path names it
	First, Second map[string]any // the two items, as JSON objects
}

func (c Collision) String() string {
	first, _ := json.Marshal(c.First)
	second, _ := json.Marshal(c.Second)
	value, _ := json.Marshal(c.First[c.Key])
	return fmt.Sprintf("%s: entries %s and %s share %s %s, and Metacontroller's apply would merge them into one",
		c.Path, first, second, c.Key, value)
}

// Collisions lists every list of objects in obj whose items would collide
// under the merge, sorted by path. obj is an object as JSON decodes it
// (map[string]any) or an API object of Go types, read as its JSON form
// (fields by their JSON names, omitted fields absent, a value with a
// MarshalJSON method opaque) without that form being built: a sync checks
// every child it builds. A path is built only for a collision.
func Collisions(obj any) []Collision {
	w := walker{}
	w.walk(reflect.ValueOf(obj))
	slices.SortStableFunc(w.found, func(a, b Collision) int { return strings.Compare(a.Path, b.Path) })
	return w.found
}

// walker holds the path to where it is, formatted only for a collision.
type walker struct {
	path  []segment
	found []Collision
}

// segment is a field name, or a list item: by its merge key's value in a
// list merged by key, else by index.
type segment struct {
	field, key, value string
	index             int
}

func (w *walker) walk(v reflect.Value) {
	if o, ok := asObject(v); ok {
		o.each(w.field)
	} else if l, ok := asList(v); ok {
		w.list(l)
	}
}

// field walks an object's member that may hold objects or lists.
func (w *walker) field(name string, v reflect.Value) {
	w.path = append(w.path, segment{field: name})
	w.walk(v)
	w.path = w.path[:len(w.path)-1]
}

func (w *walker) list(l reflect.Value) {
	items := make([]object, l.Len())
	for i := range items {
		items[i], _ = asObject(l.Index(i))
	}
	key := listKey(items)
	values := make([]string, len(items))
	for i, it := range items {
		if !it.v.IsValid() {
			continue
		}
		seg := segment{index: i}
		if key != "" {
			values[i] = keyString(it.member(key))
			seg.key, seg.value = key, values[i]
			w.checkBefore(items, values, i, key)
		}
		w.path = append(w.path, seg)
		it.each(w.field)
		w.path = w.path[:len(w.path)-1]
	}
}

// checkBefore records item i of a list when an earlier item has its key
// value (the first such item only). Lists in pod specs are short:
// comparing beats building a set.
func (w *walker) checkBefore(items []object, values []string, i int, key string) {
	if j := slices.Index(values[:i], values[i]); j >= 0 {
		w.found = append(w.found, Collision{Path: w.pathString(), Key: key, Value: values[i],
			First: asJSONObject(items[j].v), Second: asJSONObject(items[i].v)})
	}
}

func (w *walker) pathString() string {
	var b strings.Builder
	for i, s := range w.path {
		switch {
		case s.field != "" && i > 0:
			b.WriteString("." + s.field)
		case s.field != "":
			b.WriteString(s.field)
		case s.key != "":
			b.WriteString("[" + s.key + "=" + s.value + "]")
		default:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		}
	}
	return b.String()
}

// listKey is the key a list is merged by, as MergeKey chooses it; items
// that are not objects have no valid value.
func listKey(items []object) string {
	if len(items) == 0 {
		return ""
	}
	for _, it := range items {
		if !it.v.IsValid() {
			return ""
		}
	}
	for _, k := range MergeKeys {
		if allHaveMember(items, k) {
			return k
		}
	}
	return ""
}

func allHaveMember(items []object, key string) bool {
	for _, it := range items {
		if !it.member(key).IsValid() {
			return false
		}
	}
	return true
}

// object is a value whose JSON form is an object: a map with string keys,
// or a struct (fields) that does not write its own JSON.
type object struct {
	v      reflect.Value
	fields []jsonfields.Field // nil for a map
}

// asObject is v as an object, if its JSON form is one.
func asObject(v reflect.Value) (object, bool) {
	v = deref(v)
	switch {
	case !v.IsValid():
	case v.Kind() == reflect.Map && !v.IsNil() && v.Type().Key().Kind() == reflect.String:
		return object{v: v}, true
	case v.Kind() == reflect.Struct:
		if t := jsonfields.Of(v.Type()); !t.Marshals {
			return object{v: v, fields: t.Fields}, true
		}
	}
	return object{}, false
}

// asList is v as a list, if its JSON form is one (a nil slice is null, a
// []byte a string).
func asList(v reflect.Value) (reflect.Value, bool) {
	v = deref(v)
	if !v.IsValid() || v.Kind() != reflect.Slice && v.Kind() != reflect.Array ||
		v.Kind() == reflect.Slice && v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 || jsonfields.Of(v.Type()).Marshals {
		return reflect.Value{}, false
	}
	return v, true
}

// each calls fn with every member that may hold objects or lists.
func (o object) each(fn func(name string, v reflect.Value)) {
	if o.v.Kind() == reflect.Map {
		for it := o.v.MapRange(); it.Next(); {
			fn(it.Key().String(), it.Value())
		}
		return
	}
	for _, f := range o.fields {
		if !f.Nested {
			continue
		}
		if v, ok := f.Value(o.v); ok {
			fn(f.Name, v)
		}
	}
}

// member is the object's member of that name, or the zero Value when its
// JSON form has none.
func (o object) member(name string) reflect.Value {
	if o.v.Kind() == reflect.Map {
		return o.v.MapIndex(reflect.ValueOf(name))
	}
	for _, f := range o.fields {
		if f.Name == name {
			v, _ := f.Value(o.v)
			return v
		}
	}
	return reflect.Value{}
}

// keyString is a merge key's value as a map key: a string as it is, an
// integer in decimal, anything else as its JSON.
func keyString(v reflect.Value) string {
	v = deref(v)
	switch {
	case !v.IsValid():
		return "null"
	case v.Kind() == reflect.String && !jsonfields.Of(v.Type()).Marshals:
		return v.String()
	case v.CanInt():
		return strconv.FormatInt(v.Int(), 10)
	case v.CanUint():
		return strconv.FormatUint(v.Uint(), 10)
	}
	b, _ := json.Marshal(v.Interface())
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s // a value that marshals itself as a string, like an IntOrString
	}
	return string(b)
}

// asJSONObject is a list item as a JSON object, for a collision's message.
func asJSONObject(v reflect.Value) map[string]any {
	v = deref(v)
	if m, ok := v.Interface().(map[string]any); ok {
		return m
	}
	var m map[string]any
	b, _ := json.Marshal(v.Interface())
	_ = json.Unmarshal(b, &m)
	return m
}

// deref follows pointers and interfaces; nil gives the zero Value.
func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}
