package actorindex

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/asya-sh/asya-sync/api/hook"
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

// TestDecode: an actor, as a watch event or a list delivers it, is kept
// with its metadata and spec, as a claimant list decodes them, and none of
// the rest; a bookmark keeps its resourceVersion and whether it ends the
// initial events; a Status decodes as the error it is.
func TestDecode(t *testing.T) {
	const actor = `{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor",
	  "metadata":{"name":"echo-1","namespace":"team-a","uid":"u1","generation":3,"resourceVersion":"42",
	    "creationTimestamp":"2026-11-01T10:00:00Z","deletionTimestamp":"2026-11-02T10:00:00Z",
	    "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"},
	    "managedFields":[{"manager":"kubectl"}]},
	  "spec":{"actor":"echo","transport":"rabbitmq","image":"python:3.12-slim"},
	  "status":{"status":"Running"}}`
	event := decodeEvent(t, `{"type":"MODIFIED","object":`+actor+`}`)
	if event.Type != watch.Modified {
		t.Errorf("event type %q", event.Type)
	}
	e := event.Object.(*entry)
	if names, _ := nameOf(e); !cmp.Equal(names, []string{"echo-1"}) {
		t.Errorf("name index %v", names)
	}
	if keys, _ := twinsKeyOf(e); !cmp.Equal(keys, []string{"team-a/echo"}) {
		t.Errorf("twins index %v", keys)
	}
	if e.ResourceVersion != "42" || e.Annotations != nil {
		t.Errorf("entry metadata %+v", e.ObjectMeta)
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

	list, _, err := objects{}.Decode([]byte(`{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActorList",
	  "metadata":{"resourceVersion":"77","continue":"next"},"items":[`+actor+`]}`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil || len(items) != 1 || items[0].(*entry).Name != "echo-1" {
		t.Errorf("list items %v, %v", items, err)
	}
	if l, err := meta.ListAccessor(list); err != nil || l.GetResourceVersion() != "77" || l.GetContinue() != "next" {
		t.Errorf("list metadata %v, %v", l, err)
	}

	bookmark := decodeEvent(t, `{"type":"BOOKMARK","object":{"kind":"AsyncActor","apiVersion":"asya.sh/v1alpha1",
	  "metadata":{"resourceVersion":"90","annotations":{"k8s.io/initial-events-end":"true"}}}}`)
	if b := bookmark.Object.(*entry); b.ResourceVersion != "90" || !initialEventsEnd(b) {
		t.Errorf("bookmark %+v", b.ObjectMeta)
	}

	gone := decodeEvent(t, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},
	  "status":"Failure","message":"too old resource version: 1 (90)","reason":"Expired","code":410}}`)
	if err := apierrors.FromObject(gone.Object); !apierrors.IsResourceExpired(err) {
		t.Errorf("a 410 event decodes as %v", err)
	}
}

// decodeEvent decodes a watch event as the REST client does.
func decodeEvent(t *testing.T, data string) watch.Event {
	t.Helper()
	dec := restwatch.NewDecoder(streaming.NewDecoder(io.NopCloser(strings.NewReader(data)), events{}), objects{})
	typ, obj, err := dec.Decode()
	if err != nil {
		t.Fatal(err)
	}
	return watch.Event{Type: typ, Object: obj}
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
	fake.Add(&entry{ObjectMeta: metav1.ObjectMeta{Name: "echo"}})
	<-w.ResultChan()
	if !x.broken.Load() {
		t.Error("the index was mended before the initial events ended")
	}
	fake.Action(watch.Bookmark, entryFor(&hook.WatchedActor{InitialEventsEnd: true}))
	<-w.ResultChan()
	if x.broken.Load() {
		t.Error("the index stayed broken after the initial events ended")
	}
}
