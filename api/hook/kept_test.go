package hook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKeptChildren: each child is read as its last-applied configuration,
// and in full only when it has none that decodes to an object; the
// children come sorted by group, namespace and name.
func TestKeptChildren(t *testing.T) {
	body := `{"parent": {"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": {"name": "p", "namespace": "ns"}}, "children": {
	  "Deployment.apps/v1": {
	    "ns/b": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "b", "namespace": "ns", "managedFields": [{"manager": "x"}],
	      "annotations": {"metacontroller.k8s.io/last-applied-configuration": "{\"kind\":\"Deployment\",\"spec\":{\"replicas\":2}}"}},
	      "status": {"replicas": 9}},
	    "ns/a": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "ns", "uid": "u1"}, "spec": {"replicas": 1}}
	  },
	  "ConfigMap.v1": {
	    "ns/c": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns",
	      "annotations": {"metacontroller.k8s.io/last-applied-configuration": "not json"}}, "data": {"k": "v"}},
	    "ns/n": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "namespace": "ns",
	      "annotations": {"metacontroller.k8s.io/last-applied-configuration": "null"}}},
	    "ns/gone": null
	  }
	}}`
	req, err := DecodeSyncRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := req.KeptChildren()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name    string
		Applied map[string]any
		Object  map[string]any
	}
	var got []row
	for _, k := range kept {
		r := row{Name: k.Namespace + "/" + k.Name, Applied: k.Applied}
		if k.Object != nil {
			r.Object = k.Object.Object
		}
		got = append(got, r)
	}
	meta := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"name": name, "namespace": "ns"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	want := []row{
		{Name: "ns/c", Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}, "metadata": meta("c",
			map[string]any{"annotations": map[string]any{"metacontroller.k8s.io/last-applied-configuration": "not json"}})}},
		{Name: "ns/n", Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("n",
			map[string]any{"annotations": map[string]any{"metacontroller.k8s.io/last-applied-configuration": "null"}})}},
		{Name: "ns/a", Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("a", map[string]any{"uid": "u1"}), "spec": map[string]any{"replicas": int64(1)}}},
		{Name: "ns/b", Applied: map[string]any{"kind": "Deployment", "spec": map[string]any{"replicas": float64(2)}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept children (-want +got):\n%s", diff)
	}
}
