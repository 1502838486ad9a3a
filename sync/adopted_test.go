package sync

import (
	"context"
	"strings"
	"testing"

	"github.com/asya-sh/asya-sync/finalize"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
)

// A flat actor's queue that existed before asya-sync first declared it
// (upstream's users provisioned their own) is adopted: the status says it
// is kept when the actor is deleted, and finalize keeps it, with its
// messages. This runs against the real RabbitMQ of .ci/services.sh.
func TestFlatAdoptedQueueStatusAndFinalize(t *testing.T) {
	conn := testenv.Rabbit(t)
	h := finalizeHandler(t, 5672)
	ns := testenv.UniqueName("adopt")
	queue := transport.FlatQueueName(ns, "doubler")
	declare(t, conn, queue, 2)
	t.Cleanup(func() {
		testenv.DeleteQueue(t, conn, queue)
		if ch, err := conn.Channel(); err == nil {
			ch.ExchangeDelete(rabbitmq.DefaultExchange+"-"+ns, false, false)
			ch.Close()
		}
	})

	request := func(finalizing bool) map[string]any {
		metadata := map[string]any{"name": "doubler", "namespace": ns, "uid": "u-adopt"}
		if finalizing {
			metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
		}
		parent := map[string]any{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": metadata,
			"spec": map[string]any{"actor": "doubler", "image": "python:3.12", "handler": "h.handle", "transport": "mq"}}
		return map[string]any{"parent": parent, "finalizing": finalizing}
	}
	resp, err := h.Answer(context.Background(), DecodeBody(t, request(false)))
	if err != nil {
		t.Fatal(err)
	}
	c := conditionIn(resp, "TransportReady")
	if c.Status != "True" || c.Reason != ReasonQueueAdopted || !strings.Contains(c.Message, "kept, messages and all, when the actor is deleted") ||
		!strings.Contains(c.Message, finalize.AnnotationQueueDeletionPolicy+": "+finalize.PolicyDelete) {
		t.Fatalf("TransportReady = %s %s %q; want True, %s, saying the queue is kept and how to change that", c.Status, c.Reason, c.Message, ReasonQueueAdopted)
	}

	// A later sync, whose ensure the cache answers, still says so: the
	// ensure that reached the broker learned it.
	resp, err = h.Answer(context.Background(), DecodeBody(t, request(false)))
	if err != nil {
		t.Fatal(err)
	}
	if c := conditionIn(resp, "TransportReady"); c.Reason != ReasonQueueAdopted {
		t.Fatalf("second sync: TransportReady reason %s; want %s", c.Reason, ReasonQueueAdopted)
	}

	resp, err = h.Answer(context.Background(), DecodeBody(t, request(true)))
	if err != nil {
		t.Fatal(err)
	}
	if c := conditionIn(resp, "TransportReady"); !resp.Finalized || c.Reason != "QueueKept" || !strings.Contains(c.Message, "adopted") {
		t.Fatalf("finalized=%v TransportReady %s %q; want finalized, QueueKept, saying it was adopted", resp.Finalized, c.Reason, c.Message)
	}
	if !testenv.QueueExists(t, conn, queue) {
		t.Error("the adopted queue was deleted with the actor")
	}
}
