package sync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/internal/testenv"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport"
)

// Flat actors of two namespaces that name one queue, namespace X's actor
// b-doubler and namespace X-b's doubler (asya-X-b-doubler), through the
// real hooks against the real brokers: Metacontroller sends neither the
// other, so the broker's owner record decides.

// flatActor is one flat AsyncActor as the API server returns it, named
// after its spec.actor.
type flatActor struct {
	namespace, actor, transport string
	deleting                    bool
}

func (a flatActor) object() map[string]any {
	meta := map[string]any{"name": a.actor, "namespace": a.namespace, "uid": "uid-" + a.namespace + "-" + a.actor,
		"generation": 1, "creationTimestamp": time.Now().UTC().Format(time.RFC3339)}
	if a.deleting {
		meta["deletionTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	}
	spec := map[string]any{"actor": a.actor, "image": "python:3.12", "handler": "h.handle"}
	if a.transport != "mq" { // mq is the service's transport for flat actors
		spec["transport"] = a.transport
	}
	return map[string]any{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": meta, "spec": spec}
}

func (a flatActor) queue() string { return transport.FlatQueueName(a.namespace, a.actor) }

// answer runs a sync, or with deleting a finalize, of a as the only actor
// of its namespace, as Metacontroller sends it.
func (a flatActor) answer(t *testing.T, h *hooksync.Handler) *hook.Response {
	t.Helper()
	req := hooksync.DecodeBody(t, map[string]any{"parent": a.object(), "finalizing": a.deleting,
		"related": map[string]any{v1alpha1.Kind + "." + v1alpha1.GroupVersion.String(): map[string]any{
			a.namespace + "/" + a.actor: a.object()}}})
	resp, err := h.Answer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (a flatActor) deleted() flatActor { a.deleting = true; return a }

// wantHeld checks that a, answered resp, stands by for a queue another
// namespace's actor owns: QueueConflict naming the owner, no replicas.
func wantHeld(t *testing.T, resp *hook.Response, a flatActor, owner string) {
	t.Helper()
	c := condition(resp, "TransportReady")
	if resp.Status.Status != "TransportError" || c.Reason != "QueueConflict" || !strings.Contains(c.Message, owner) {
		t.Fatalf("%s/%s: status %q, TransportReady %+v; want TransportError, QueueConflict naming %s",
			a.namespace, a.actor, resp.Status.Status, c, owner)
	}
	for _, c := range resp.Children {
		if child, _ := c.Object(); child["kind"] == "Deployment" {
			if replicas := child["spec"].(map[string]any)["replicas"]; replicas != int64(0) && replicas != float64(0) {
				t.Errorf("%s/%s: Deployment replicas %v, want 0", a.namespace, a.actor, replicas)
			}
		}
	}
}

func wantReady(t *testing.T, resp *hook.Response, a flatActor) {
	t.Helper()
	if resp.Status.TransportStatus != "Ready" {
		t.Fatalf("%s/%s: TransportReady %+v, want the queue ensured", a.namespace, a.actor, condition(resp, "TransportReady"))
	}
}

func TestFlatQueueOneOwnerAcrossNamespaces(t *testing.T) {
	eachBroker(t, func(t *testing.T, transportName string, b broker, h *hooksync.Handler) {
		x := testenv.UniqueName("own")
		owner := flatActor{namespace: x + "-b", actor: "doubler", transport: transportName}
		other := flatActor{namespace: x, actor: "b-doubler", transport: transportName}
		queue := owner.queue()
		t.Cleanup(func() {
			b.remove(t, []string{x, x + "-b"}, queue, x+"-b-x-sink", x+"-b-x-sump", x+"-x-sink", x+"-x-sump")
		})

		wantReady(t, owner.answer(t, h), owner)
		for range 2 { // and the resync after
			wantHeld(t, other.answer(t, h), other, "actor doubler of namespace "+owner.namespace)
		}

		b.send(t, owner.namespace, owner.actor)
		if transportName == "mq" {
			// The other actor's route reaches no queue: its sync bound none.
			b.send(t, other.namespace, other.actor)
		}
		if n := b.messages(t, queue); n != 1 {
			t.Fatalf("%s holds %d messages, want only the owner's 1", queue, n)
		}
		fin := other.deleted().answer(t, h)
		if !fin.Finalized {
			t.Fatalf("finalize of %s/%s: not finalized: %+v", other.namespace, other.actor, condition(fin, "TransportReady"))
		}
		if n := b.messages(t, queue); n != 1 {
			t.Fatalf("after the other actor's finalize %s holds %d messages (-1: gone), want the owner's 1", queue, n)
		}
		wantReady(t, owner.answer(t, h), owner)

		// The owner goes with its queue; the other takes a new one over.
		if fin := owner.deleted().answer(t, h); !fin.Finalized {
			t.Fatalf("finalize of the owner: not finalized: %+v", condition(fin, "TransportReady"))
		}
		if n := b.messages(t, queue); n != -1 {
			t.Fatalf("after the owner's finalize %s still exists with %d messages", queue, n)
		}
		if transportName == "mq" { // SQS refuses a queue's name for 60 s after a delete
			wantReady(t, other.answer(t, h), other)
		}
	})
}

// The sink queue of namespace X-b, asya-X-b-x-sink, is also the queue of
// namespace X's actor b-x-sink. Whichever comes first owns it.
func TestFlatSinkQueueOneOwnerAcrossNamespaces(t *testing.T) {
	eachBroker(t, func(t *testing.T, transportName string, b broker, h *hooksync.Handler) {
		x := testenv.UniqueName("sink")
		owner := flatActor{namespace: x, actor: "b-x-sink", transport: transportName}
		sink := flatActor{namespace: x + "-b", actor: "x-sink", transport: transportName}
		member := flatActor{namespace: x + "-b", actor: "doubler", transport: transportName}
		queue := owner.queue()
		if queue != sink.queue() {
			t.Fatalf("%s and %s: not one queue", queue, sink.queue())
		}
		t.Cleanup(func() {
			b.remove(t, []string{x, x + "-b"}, queue, member.queue(), x+"-b-x-sump", x+"-x-sink", x+"-x-sump")
		})

		wantReady(t, owner.answer(t, h), owner)
		wantHeld(t, member.answer(t, h), member, "actor b-x-sink of namespace "+x)
		wantHeld(t, sink.answer(t, h), sink, "actor b-x-sink of namespace "+x)
		if n := b.messages(t, member.queue()); n != 0 {
			t.Errorf("%s, the queue of %s/%s, holds %d messages (-1: gone), want it ensured and empty",
				member.queue(), member.namespace, member.actor, n)
		}

		b.send(t, owner.namespace, owner.actor)
		if transportName == "mq" {
			// What namespace X-b's actors end in its sink reaches no queue.
			b.send(t, sink.namespace, sink.actor)
		}
		if n := b.messages(t, queue); n != 1 {
			t.Fatalf("%s holds %d messages, want only the owner's 1", queue, n)
		}
		for _, gone := range []flatActor{member.deleted(), sink.deleted()} {
			if fin := gone.answer(t, h); !fin.Finalized {
				t.Fatalf("finalize of %s/%s: not finalized: %+v", gone.namespace, gone.actor, condition(fin, "TransportReady"))
			}
			if n := b.messages(t, queue); n != 1 {
				t.Fatalf("after the finalize of %s/%s, %s holds %d messages (-1: gone), want the owner's 1",
					gone.namespace, gone.actor, queue, n)
			}
		}
		if fin := owner.deleted().answer(t, h); !fin.Finalized {
			t.Fatalf("finalize of the owner: not finalized: %+v", condition(fin, "TransportReady"))
		}
	})
}
