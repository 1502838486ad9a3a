package hook

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

// TestRelatedActorsDecodeTheirClaim: a related actor is decoded as far as
// the ownership of a queue reads it, in the request's one decode pass;
// what it names its queue by comes from its spec's shape, and a field
// that does not decode costs it nothing else.
func TestRelatedActorsDecodeTheirClaim(t *testing.T) {
	body := []byte(`{"parent": {"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": {"name": "a", "namespace": "n"}, "spec": {}},
	"related": {"AsyncActor.asya.sh/v1alpha1": {
		"n/nested": {"metadata": {"name": "nested", "namespace": "n", "uid": "u1", "creationTimestamp": "2026-01-02T03:04:05Z"},
			"spec": {"transport": "mq", "workload": {}}},
		"n/flat": {"metadata": {"name": "flat", "namespace": "n", "uid": "u2", "deletionTimestamp": "2026-01-02T03:04:05Z"},
			"spec": {"actor": "doubler", "image": "i", "handler": "h.f"}},
		"n/no-actor": {"metadata": {"name": "no-actor", "namespace": "n"}, "spec": {"image": "i", "handler": "h.f"}},
		"n/bad-env": {"metadata": {"name": "bad-env", "namespace": "n"}, "spec": {"actor": "tripler", "transport": "sqs", "env": "not a list"}},
		"n/bad-transport": {"metadata": {"name": "bad-transport", "namespace": "n"}, "spec": {"transport": 5, "actor": "quadrupler"}},
		"n/mixed": {"metadata": {"name": "mixed", "namespace": "n"}, "spec": {"actor": "x", "workload": {}}},
		"n/claim": {"metadata": {"name": "claim", "namespace": "n"}, "spec": {"actor": "halver", "transport": "sqs",
			"compositionRef": {"name": "asyncactor-rabbitmq"}, "compositionSelector": {"matchLabels": {"asya.sh/transport": "rabbitmq"}}}},
		"n/selector": {"metadata": {"name": "selector", "namespace": "n"}, "spec": {"actor": "thirder",
			"compositionSelector": {"matchLabels": {"asya.sh/transport": "pubsub"}}}}
	}}}`)
	req, err := DecodeSyncRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	type claim struct {
		Name, UID, Transport string
		Composition          string // the transport its composition names
		QueueActor           string
		Scoped, Created      bool
		Terminating          bool
	}
	var got []claim
	for _, a := range req.Related.AsyncActors.List() {
		name, scoped := a.QueueActor()
		composition, _ := a.Spec.CompositionTransport()
		got = append(got, claim{a.Name, string(a.UID), a.TransportName(), composition, name, scoped,
			!a.CreationTimestamp.IsZero(), a.DeletionTimestamp != nil})
	}
	want := []claim{
		{Name: "bad-env", Transport: "sqs", QueueActor: "tripler", Scoped: true},
		{Name: "bad-transport", QueueActor: "quadrupler", Scoped: true},
		{Name: "claim", Transport: "sqs", Composition: "rabbitmq", QueueActor: "halver", Scoped: true},
		{Name: "flat", UID: "u2", QueueActor: "doubler", Scoped: true, Terminating: true},
		{Name: "mixed", QueueActor: "mixed"}, // mixes shapes: claims as a nested actor, as before
		{Name: "nested", UID: "u1", Transport: "mq", QueueActor: "nested", Created: true},
		{Name: "no-actor", Scoped: true}, // names no queue: transport.Owner leaves it out
		{Name: "selector", Composition: "pubsub", QueueActor: "thirder", Scoped: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("related actors (-want +got):\n%s", diff)
	}
	if req.Related.AsyncActors.KeyedByName() {
		t.Error("KeyedByName with every key namespace/name")
	}
}

// TestDecodeActorList: a list as the API server answers it, managedFields
// and status included, keyed namespace/name, each actor's claim readable.
func TestDecodeActorList(t *testing.T) {
	data := []byte(`{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActorList","metadata":{"resourceVersion":"42"},"items":[
	 {"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"echo","namespace":"a","uid":"u1",
	  "creationTimestamp":"2026-11-28T10:00:00Z","managedFields":[{"manager":"kubectl","operation":"Apply","fieldsV1":{"f:spec":{}}}]},
	  "spec":{"transport":"mq"},"status":{"status":"Running"}},
	 {"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor","metadata":{"name":"t2","namespace":"b","uid":"u2",
	  "creationTimestamp":"2026-11-28T11:00:00Z"},"spec":{"actor":"doubler","image":"python:3.13","handler":"h.f"}}]}`)
	group, err := DecodeActorList(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range group.List() {
		got = append(got, a.Namespace+"/"+a.Name+" "+string(a.UID)+" "+a.Spec.Transport+" "+a.Spec.Actor)
	}
	if want := []string{"a/echo u1 mq ", "b/t2 u2  doubler"}; !slices.Equal(got, want) {
		t.Errorf("decoded %q, want %q", got, want)
	}
	if group.KeyedByName() {
		t.Error("keyed by bare name, want namespace/name")
	}
	if _, err := DecodeActorList([]byte(`{"items":{}}`)); err == nil {
		t.Error("a list whose items are no array decoded")
	}
}
