// Package dynamicapply holds Metacontroller's default way of updating a
// child ("dynamic apply", the --apply-strategy default): a three-way merge
// of the observed object, the last-applied configuration and the desired
// object, in which lists of objects are merged as maps by a conventional
// key. A desired child in which two items of such a list share their key
// cannot survive that merge: the items collapse into one. Collisions finds
// those lists; Merge is the merge itself, for tests and the e2e driver.
package dynamicapply

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// MergeKeys are the conventional keys, in the order Metacontroller tries
// them: a list whose items are all objects and all have one of these
// fields is merged as a map keyed by the first such field.
var MergeKeys = []string{"containerPort", "port", "mountPath", "name", "uid", "ip", "path"}

// MergeKey returns the key the lists are merged by when taken together,
// or "" when they are atomic (replaced whole): an item that is not an
// object, or no conventional key that every item has. Empty lists do not
// decide.
func MergeKey(lists ...[]any) string {
	var items []object
	for _, l := range lists {
		for _, it := range l {
			o, _ := asObject(reflect.ValueOf(it))
			items = append(items, o)
		}
	}
	return listKey(items)
}

// keyOf is an item's merge key value as a map key.
func keyOf(item any, key string) string {
	return keyString(reflect.ValueOf(item.(map[string]any)[key]))
}

// Merge returns observed updated the way Metacontroller updates a child:
// every field of desired is set (maps merged key by key, lists of objects
// merged item by item as maps, other lists replaced), every field that
// lastApplied had and desired no longer has is removed, and every other
// field of observed (set by the API server or by others) is kept. Its
// arguments are not changed.
func Merge(observed, lastApplied, desired map[string]any) map[string]any {
	return mergeValue(observed, lastApplied, desired).(map[string]any)
}

func mergeValue(observed, lastApplied, desired any) any {
	switch d := desired.(type) {
	case map[string]any:
		o, _ := observed.(map[string]any)
		l, _ := lastApplied.(map[string]any)
		return mergeMap(o, l, d)
	case []any:
		o, _ := observed.([]any)
		l, _ := lastApplied.([]any)
		if key := MergeKey(o, l, d); key != "" {
			return mergeListMap(o, l, d, key)
		}
		return runtime.DeepCopyJSONValue(d)
	default:
		return desired
	}
}

func mergeMap(observed, lastApplied, desired map[string]any) map[string]any {
	out := make(map[string]any, len(observed)+len(desired))
	for k, v := range observed {
		out[k] = runtime.DeepCopyJSONValue(v)
	}
	for k := range lastApplied {
		if _, keep := desired[k]; !keep {
			delete(out, k)
		}
	}
	for k, v := range desired {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergeValue(observed[k], lastApplied[k], v)
	}
	return out
}

// mergeListMap merges lists of objects as maps by key: converted to maps
// (where two items share a key, the later one is kept), merged, and turned
// back into a list in desired's order, followed by the items only observed
// has (added by others), in their order.
func mergeListMap(observed, lastApplied, desired []any, key string) []any {
	asMap := func(l []any) map[string]any {
		m := make(map[string]any, len(l))
		for _, it := range l {
			m[keyOf(it, key)] = it
		}
		return m
	}
	merged := mergeMap(asMap(observed), asMap(lastApplied), asMap(desired))
	out := make([]any, 0, len(merged))
	placed := map[string]bool{}
	for _, it := range desired {
		k := keyOf(it, key)
		out = append(out, merged[k])
		placed[k] = true
	}
	for _, it := range observed {
		k := keyOf(it, key)
		if v, ok := merged[k]; ok && !placed[k] {
			out = append(out, v)
			placed[k] = true
		}
	}
	return out
}

// Changes reports whether Merge would change observed: whether
// Metacontroller would send an update.
func Changes(observed, lastApplied, desired map[string]any) bool {
	return !reflect.DeepEqual(Merge(observed, lastApplied, desired), observed)
}
