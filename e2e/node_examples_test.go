//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// exampleRuns says, for each actor of examples/, which message to send it
// and what its handler answers. The README's quick starts run two of
// them, as printed (TestNodeQuickStart).
var exampleRuns = map[string]struct {
	quickStart bool
	payload    obj
	want       string // the result's payload, as fmt prints it
}{
	"hello-actor.yaml/hello":             {quickStart: true},
	"flat-actor.yaml/text-analyzer":      {quickStart: true},
	"hardened-actor.yaml/hello-hardened": {payload: obj{"name": "Asya"}, want: "map[greeting:hello, Asya]"},
	"flat-actor-0.5.yaml/summarizer":     {payload: obj{"text": "Asya runs actors. KEDA scales them."}, want: "map[summary:Asya runs actors]"},
}

// TestNodeExamples runs each example of examples/ as shipped, with the
// ConfigMap that carries its handler, in a namespace of its own, and sends
// it one message: its handler's result must reach the end of its route.
// The examples scale from zero, so KEDA starts their pods.
func TestNodeExamples(t *testing.T) {
	d := nodeDriver(t)
	for _, ex := range examples(t) {
		name := str(ex.actor, "metadata", "name")
		key := filepath.Base(ex.file) + "/" + name
		run, ok := exampleRuns[key]
		t.Run(key, func(t *testing.T) {
			switch {
			case !ok:
				t.Fatalf("no message for example %s: add it to exampleRuns", key)
			case run.quickStart:
				t.Skip("run as printed by TestNodeQuickStart")
			}
			ctx := context.Background()
			b := nodeBrokerOf(t, ex.actor)
			ns := nodeNamespace(t, ctx, b.name("node-e2e-example-"+name), nil)
			docs, err := readYAMLDocs(ex.file)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range docs {
				mapAt(doc, "metadata")["namespace"] = ns
				if str(doc, "kind") == "AsyncActor" {
					continue
				}
				if _, err := env.cluster.client.apply(ctx, doc, "e2e"); err != nil {
					t.Fatalf("apply %s %s: %v", str(doc, "kind"), str(doc, "metadata", "name"), err)
				}
			}
			mapAt(ex.actor, "metadata")["namespace"] = ns
			end := routeEnd(t, ctx, b, ns, ex.actor)
			runActor(t, ctx, d, ex.actor)
			// As the README's kubectl wait: its queue exists, so a message
			// sent now is kept until KEDA starts a pod.
			awaitActor(t, ctx, d, ns, name, 2*time.Minute, "Ready", conditionTrue("Ready"))
			id := sendExample(t, ctx, b, ns, ex.actor, run.payload)
			got := awaitResult(t, ctx, end, id, ns, name)
			if fmt.Sprint(got.Payload) != run.want {
				t.Errorf("result %s, want payload %s", got.Raw, run.want)
			}
		})
	}
}

// awaitResult waits for the message's result at the end of its route;
// on timeout it shows the actor's pods and the end of their logs.
func awaitResult(t *testing.T, ctx context.Context, end *collector, id, ns, name string) envelope {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		for _, m := range end.b.take(t, ctx, end.actor) {
			if m.ID == id {
				return m
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("no result of %s on asya-%s 3 min after it was sent\n%s", id, end.actor, podReport(ctx, ns, "asya.sh/asya="+name))
	return envelope{}
}

// conditionTrue passes on a status whose condition of that type is True.
func conditionTrue(typ string) func(obj) error {
	return func(s obj) error {
		conds, _ := s["conditions"].([]any)
		for _, c := range conds {
			if str(c.(obj), "type") == typ && str(c.(obj), "status") == "True" {
				return nil
			}
		}
		return fmt.Errorf("condition %s not True", typ)
	}
}

// nodeBrokerOf is the broker of the example's transport: its own, or the
// flat actors' transport of the node's service (rabbitmq).
func nodeBrokerOf(t *testing.T, actor obj) nodeBroker {
	t.Helper()
	transport := str(actor, "spec", "transport")
	if transport == "" {
		transport = "rabbitmq"
	}
	for _, b := range nodeBrokers {
		if b.transport == transport {
			return b
		}
	}
	t.Fatalf("no node broker for transport %q", transport)
	return nodeBroker{}
}

// routeEnd collects what reaches the end of the actor's routes: its
// namespace's sink for a flat actor, asya-happy-end for a 0.3 one. Made
// before the actor, as the broker's own queue would be.
func routeEnd(t *testing.T, ctx context.Context, b nodeBroker, ns string, actor obj) *collector {
	if str(actor, "spec", "actor") != "" {
		return flatEnd(t, ctx, b, ns, "x-sink")
	}
	return newCollector(t, ctx, b, "happy-end")
}

// sendExample puts one message on the actor's queue and returns its id.
func sendExample(t *testing.T, ctx context.Context, b nodeBroker, ns string, actor, payload obj) string {
	t.Helper()
	if flat := str(actor, "spec", "actor"); flat != "" {
		m := flatMessage(payload, flat)
		sendFlat(t, ctx, b, ns, flat, m)
		return m["id"].(string)
	}
	m := message(str(actor, "metadata", "name"), payload)
	b.send(t, ctx, m.Route.Actors[0], m)
	return m.ID
}
