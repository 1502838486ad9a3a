//go:build e2e

package node

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// The node service's transport rabbitmq-vh: a vhost of its own, whose user
// logs in with a password from a Secret (the service's own from
// credentials.rabbitmq, the sidecars' from passwordSecretRef).
const (
	nodeVHost         = "asya-vh"
	nodeVHostUser     = "asya-vh-e2e"
	nodeVHostPassword = "vh-e2e-pass.2026"
)

// TestNodeRabbitMQVHost: an actor on a transport with a vhost other than
// "/" consumes its queue in that vhost and hands its result to the next
// actor there. The sidecar gets the vhost through ASYA_RABBITMQ_URL, its
// password expanded by the kubelet from the Secret.
func TestNodeRabbitMQVHost(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	vhURL := testenv.RabbitVHost(t, nodeVHost, nodeVHostUser, nodeVHostPassword)
	ns := nodeNamespace(t, ctx, "node-e2e-vhost", nil)
	if _, err := env.Cluster.Client.Apply(ctx, testenv.Obj{"apiVersion": "v1", "kind": "Secret",
		"metadata":   testenv.Obj{"name": "rabbitmq-vh", "namespace": ns},
		"stringData": testenv.Obj{"password": nodeVHostPassword}}, "e2e"); err != nil {
		t.Fatal(err)
	}
	first, next := "vh-first", "vh-next"
	waiting := nodeActor(ns, next, "rabbitmq-vh", "handlers.process")
	testenv.MapAt(waiting, "spec", "workload")["replicas"] = 0
	runActor(t, ctx, d, waiting)
	runReadyActor(t, ctx, d, nodeActor(ns, first, "rabbitmq-vh", "handlers.process"))

	// The sidecar consumes once the runtime it waits for is ready, a
	// moment after the pod is.
	testenv.Eventually(t, 30*time.Second, "the pod's sidecar consuming asya-"+first+" in vhost "+nodeVHost, func() bool {
		var q struct {
			Consumers int `json:"consumers"`
		}
		testenv.Management(t, "GET", "/api/queues/"+nodeVHost+"/asya-"+first, &q)
		return q.Consumers == 1
	})
	m := testenv.Envelope{ID: testenv.UniqueName(first), Route: testenv.Route{Actors: []string{first, next}}, Payload: testenv.Obj{"n": 7}}
	publishVia(t, ctx, vhURL, "asya-node", first, m)
	got := awaitWaiting(t, ctx, vhURL, next, 30*time.Second)
	if got.ID != m.ID || got.Route.Current != 1 {
		t.Errorf("asya-%s holds %s, want %s one step on", next, testenv.MustJSON(got), m.ID)
	}
}

// TestNodeRabbitMQDefaultExchange: on a transport without exchange, a
// result reaches the next actor, scaled to zero, and waits in its queue:
// asya-sync binds the queues to the exchange the sidecar publishes to.
func TestNodeRabbitMQDefaultExchange(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	ns := nodeNamespace(t, ctx, "node-e2e-default-exchange", nil)
	first, next := "nx-first", "nx-next"
	waiting := nodeActor(ns, next, "rabbitmq-default-exchange", "handlers.process")
	testenv.MapAt(waiting, "spec", "workload")["replicas"] = 0
	runActor(t, ctx, d, waiting)
	runReadyActor(t, ctx, d, nodeActor(ns, first, "rabbitmq-default-exchange", "handlers.process"))

	m := testenv.Envelope{ID: testenv.UniqueName(first), Route: testenv.Route{Actors: []string{first, next}}, Payload: testenv.Obj{"n": 8}}
	publishVia(t, ctx, testenv.RabbitURL(), "asya", first, m)
	got := awaitWaiting(t, ctx, testenv.RabbitURL(), next, 30*time.Second)
	if got.ID != m.ID || got.Route.Current != 1 {
		t.Errorf("asya-%s holds %s, want %s one step on", next, testenv.MustJSON(got), m.ID)
	}
}

// publishVia publishes m as a sidecar routes it: to the exchange, keyed by
// the actor's name, on the broker at amqpURL.
func publishVia(t *testing.T, ctx context.Context, amqpURL, exchange, actor string, m any) {
	t.Helper()
	body, _ := json.Marshal(m)
	testenv.WithAMQP(t, amqpURL, func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, actor, true, false,
			amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: body})
		if err != nil {
			return err
		}
		if !c.Wait() {
			return fmt.Errorf("publish to %s not confirmed", actor)
		}
		return nil
	})
}

// awaitWaiting waits for one message on the actor's queue and takes it.
func awaitWaiting(t *testing.T, ctx context.Context, amqpURL, actor string, within time.Duration) testenv.Envelope {
	t.Helper()
	var got *testenv.Envelope
	deadline := time.Now().Add(within)
	for got == nil && time.Now().Before(deadline) {
		testenv.WithAMQP(t, amqpURL, func(ch *amqp.Channel) error {
			d, ok, err := ch.Get("asya-"+actor, true)
			if ok {
				m := testenv.DecodeEnvelope(t, d.Body)
				got = &m
			}
			return err
		})
		if got == nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if got == nil {
		t.Fatalf("nothing reached asya-%s within %s", actor, within)
	}
	return *got
}
