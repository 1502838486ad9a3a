package sync

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// These tests run the sync hook against the real RabbitMQ of
// .ci/services.sh: the queue is ensured before the children are built, and
// a broker outage leaves the children in place.

func rabbitHandler(t *testing.T, port int) *Handler {
	t.Helper()
	return NewBrokerHandler(t, fmt.Sprintf("transports: {rabbitmq: {type: rabbitmq, config: {host: 127.0.0.1, port: %d, exchange: asya-test}}}", port))
}

// actorRequest is the minimal golden request for an actor of another name.
func actorRequest(t *testing.T, name string) *hook.SyncRequest {
	t.Helper()
	req, _ := loadCase(t, filepath.Join(casesDir, "minimal"))
	actor, specErr, err := hook.DecodeParent([]byte(fmt.Sprintf(`{"apiVersion":"asya.sh/v1alpha1","kind":"AsyncActor",
"metadata":{"name":%q,"namespace":"default","generation":1},
"spec":{"transport":"rabbitmq","workload":{"template":{"spec":{"containers":[{"name":"asya-runtime","image":"python:3.12"}]}}}}}`, name)), nil)
	if err != nil || specErr != nil {
		t.Fatal(err, specErr)
	}
	req.Actor = actor
	return req
}

func TestSyncEnsuresQueueOnRealBroker(t *testing.T) {
	conn := testenv.Rabbit(t)
	h := rabbitHandler(t, 5672)
	actor := testenv.UniqueName("sync")
	t.Cleanup(func() { testenv.DeleteQueue(t, conn, transport.QueueName(actor)) })
	req := actorRequest(t, actor)

	resp, err := h.Answer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status.TransportStatus != "Ready" || !testenv.QueueExists(t, conn, transport.QueueName(actor)) {
		t.Fatalf("transportStatus=%q, queue exists=%v; want Ready and the queue declared",
			resp.Status.TransportStatus, testenv.QueueExists(t, conn, transport.QueueName(actor)))
	}
	if len(resp.Children) != 2 {
		t.Errorf("children = %d, want ConfigMap and Deployment", len(resp.Children))
	}
}

func TestSyncWithBrokerDownKeepsChildren(t *testing.T) {
	h := rabbitHandler(t, testenv.ClosedPort(t))
	req := actorRequest(t, testenv.UniqueName("down"))
	resp, err := h.Answer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	reason := conditionIn(resp, "TransportReady").Reason
	if resp.Status.Status != "TransportError" || reason != transport.ReasonBrokerUnavailable || len(resp.Children) != 2 {
		t.Errorf("status=%q reason=%q children=%d; want TransportError, BrokerUnavailable and both children still returned",
			resp.Status.Status, reason, len(resp.Children))
	}
}

// TestParallelSyncsCreateOneQueueEach runs 200 syncs of 200 actors at once
// through one handler, as Metacontroller's workers would.
func TestParallelSyncsCreateOneQueueEach(t *testing.T) {
	conn := testenv.Rabbit(t)
	h := rabbitHandler(t, 5672)
	prefix := testenv.UniqueName("fleet")
	const actors = 200
	errs := make(chan error, actors)
	for i := 0; i < actors; i++ {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		t.Cleanup(func() { testenv.DeleteQueue(t, conn, transport.QueueName(name)) })
		req := actorRequest(t, name)
		go func() {
			resp, err := h.Answer(context.Background(), req)
			if err == nil && resp.Status.TransportStatus != "Ready" {
				err = fmt.Errorf("%s: transportStatus %q", name, resp.Status.TransportStatus)
			}
			errs <- err
		}()
	}
	for i := 0; i < actors; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for i := 0; i < actors; i++ {
		if q := transport.QueueName(fmt.Sprintf("%s-%03d", prefix, i)); !testenv.QueueExists(t, conn, q) {
			t.Errorf("queue %s missing after its sync", q)
		}
	}
}
