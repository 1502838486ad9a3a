package actorindex

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

// TestLookup: the index answers the two claimant lists the sync makes,
// and leaves any other list to the API server.
func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		namespace, selector string
		index, key          string
		ok                  bool
	}{
		{"", "metadata.name=echo", byName, "echo", true},
		{"team-a", "spec.actor=echo", byActor, "team-a/echo", true},
		{"team-a", "metadata.name=echo", "", "", false}, // by name in one namespace: not an index
		{"", "spec.actor=echo", "", "", false},          // twins are per namespace
		{"", "metadata.name!=echo", "", "", false},
		{"", "metadata.name=echo,spec.actor=echo", "", "", false},
		{"", "", "", "", false},
		{"", "metadata.name=", byName, "", true},
	} {
		index, key, ok := lookup(tc.namespace, tc.selector)
		if index != tc.index || key != tc.key || ok != tc.ok {
			t.Errorf("lookup(%q, %q) = %q, %q, %v; want %q, %q, %v", tc.namespace, tc.selector, index, key, ok, tc.index, tc.key, tc.ok)
		}
	}
}

// TestEntryOf: the index keeps an actor's metadata and spec, as a list
// decodes them, and none of the rest.
func TestEntryOf(t *testing.T) {
	actor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": map[string]any{
			"name": "echo-1", "namespace": "team-a", "uid": "u1", "generation": int64(3), "resourceVersion": "42",
			"creationTimestamp": "2026-11-01T10:00:00Z", "deletionTimestamp": "2026-11-02T10:00:00Z",
			"annotations":   map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}},
		},
		"spec":   map[string]any{"actor": "echo", "transport": "rabbitmq", "image": "python:3.12-slim"},
		"status": map[string]any{"status": "Running"},
	}}
	obj, err := entryOf(actor)
	if err != nil {
		t.Fatal(err)
	}
	e := obj.(*entry)
	if names, _ := nameOf(e); !cmp.Equal(names, []string{"echo-1"}) {
		t.Errorf("name index %v", names)
	}
	if keys, _ := twinsKeyOf(e); !cmp.Equal(keys, []string{"team-a/echo"}) {
		t.Errorf("twins index %v", keys)
	}
	if string(e.related.Spec) != `{"actor":"echo","image":"python:3.12-slim","transport":"rabbitmq"}` {
		t.Errorf("spec %s", e.related.Spec)
	}
	got := groupOf([]any{e}).List()
	if len(got) != 1 {
		t.Fatalf("group of one entry lists %d actors", len(got))
	}
	m := got[0]
	if m.Namespace != "team-a" || m.Name != "echo-1" || m.UID != "u1" || m.Generation != 3 ||
		m.CreationTimestamp.UTC().Format("2006-01-02T15") != "2026-11-01T10" || m.DeletionTimestamp == nil ||
		m.Spec.Transport != "rabbitmq" || m.Spec.Actor != "echo" || m.Annotations != nil || m.ManagedFields != nil {
		t.Errorf("decoded %+v", m)
	}
}

// TestMended: a broken index is ready again once its watch has caught up:
// at once after a list, at the end of the initial events of a watch that
// lists.
func TestMended(t *testing.T) {
	x := &Index{}
	x.broken.Store(true)
	x.mended(watch.NewFake(), metav1.ListOptions{})
	if x.broken.Load() {
		t.Error("a watch after a list left the index broken")
	}

	x.broken.Store(true)
	initial := true
	fake := watch.NewFake()
	w := x.mended(fake, metav1.ListOptions{SendInitialEvents: &initial})
	defer w.Stop()
	actor := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "echo"}}}
	fake.Add(actor)
	<-w.ResultChan()
	if !x.broken.Load() {
		t.Error("the index was mended before the initial events ended")
	}
	end := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{metav1.InitialEventsAnnotationKey: "true"}}}}
	fake.Action(watch.Bookmark, end)
	<-w.ResultChan()
	if x.broken.Load() {
		t.Error("the index stayed broken after the initial events ended")
	}
}
