package sync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport"
)

// TestUnmanagedQueuesAreLeftAlone: on a transport with queues.manage:
// false, as platform teams that provision queues elsewhere set it, a
// missing queue is reported and not created, an existing one is used as it
// is, and deleting the actor leaves it, messages and all.
func TestUnmanagedQueuesAreLeftAlone(t *testing.T) {
	eachBroker(t, func(t *testing.T, transportName string, b broker, h *hooksync.Handler) {
		ctx := context.Background()
		name := testenv.UniqueName("provisioned")
		queue := transport.QueueName(name)
		a := actor{"ml", name, transportName + "-unmanaged", time.Now(), false}

		resp, err := h.Answer(ctx, request(t, a, a))
		if err != nil {
			t.Fatal(err)
		}
		c := condition(resp, "TransportReady")
		if resp.Status.Status != "TransportError" || c.Reason != transport.ReasonQueueNotFound || !strings.Contains(c.Message, "queues.manage is off") {
			t.Errorf("missing queue: status %s, TransportReady %+v; want TransportError, QueueNotFound saying queues.manage is off", resp.Status.Status, c)
		}
		if n := b.messages(t, queue); n != -1 {
			t.Fatalf("the sync created the queue (%d messages)", n)
		}

		b.declare(t, queue)
		b.publish(t, queue)
		if resp, err = h.Answer(ctx, request(t, a, a)); err != nil || resp.Status.TransportStatus != "Ready" {
			t.Errorf("existing queue: err=%v status=%+v, want Ready", err, resp.Status)
		}

		gone := a
		gone.deleting = true
		fin, err := h.Answer(ctx, request(t, gone, gone))
		if err != nil || !fin.Finalized || condition(fin, "TransportReady").Reason != "QueueKept" {
			t.Fatalf("finalize: err=%v finalized=%v TransportReady %+v, want finalized, QueueKept", err, fin.Finalized, condition(fin, "TransportReady"))
		}
		if n := b.messages(t, queue); n != 1 {
			t.Errorf("after finalize the queue holds %d messages (-1: gone), want the 1 published", n)
		}

		// Clean up through a transport that manages its queues.
		managed := actor{"ml", name, transportName, time.Now(), true}
		if fin, err := h.Answer(ctx, request(t, managed, managed)); err != nil || !fin.Finalized {
			t.Fatalf("cleanup: err=%v finalized=%v", err, fin.Finalized)
		}
	})
}
