//go:build e2e

package node

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// exampleRuns says, for each actor of examples/, which message to send it
// and what its handler answers. The README's quick starts run two of
// them, as printed (TestNodeQuickStart).
var exampleRuns = map[string]struct {
	quickStart bool
	payload    testenv.Obj
	want       string // the result's payload, as fmt prints it
}{
	"hello-actor.yaml/hello":             {quickStart: true},
	"flat-actor.yaml/text-analyzer":      {quickStart: true},
	"hardened-actor.yaml/hello-hardened": {payload: testenv.Obj{"name": "Asya"}, want: "map[greeting:hello, Asya]"},
	"flat-actor-0.5.yaml/summarizer":     {payload: testenv.Obj{"text": "Asya runs actors. KEDA scales them."}, want: "map[summary:Asya runs actors]"},
}

// TestNodeExamples runs each example of examples/ as shipped, with the
// ConfigMap that carries its handler, in a namespace of its own, and sends
// it one message: its handler's result must reach the end of its route.
// The examples scale from zero, so KEDA starts their pods.
func TestNodeExamples(t *testing.T) {
	d := nodeDriver(t)
	for _, ex := range testenv.Examples(t) {
		name := testenv.Str(ex.Actor, "metadata", "name")
		key := filepath.Base(ex.File) + "/" + name
		run, ok := exampleRuns[key]
		t.Run(key, func(t *testing.T) {
			switch {
			case !ok:
				t.Fatalf("no message for example %s: add it to exampleRuns", key)
			case run.quickStart:
				t.Skip("run as printed by TestNodeQuickStart")
			}
			ctx := context.Background()
			b := nodeBrokerOf(t, ex.Actor)
			ns := nodeNamespace(t, ctx, b.Name("node-e2e-example-"+name), nil)
			docs, err := testenv.ReadYAMLDocs(ex.File)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range docs {
				testenv.MapAt(doc, "metadata")["namespace"] = ns
				if testenv.Str(doc, "kind") == "AsyncActor" {
					continue
				}
				if _, err := env.Cluster.Client.Apply(ctx, doc, "e2e"); err != nil {
					t.Fatalf("apply %s %s: %v", testenv.Str(doc, "kind"), testenv.Str(doc, "metadata", "name"), err)
				}
			}
			testenv.MapAt(ex.Actor, "metadata")["namespace"] = ns
			end := routeEnd(t, ctx, b, ns, ex.Actor)
			runActor(t, ctx, d, ex.Actor)
			// As the README's kubectl wait: its queue exists, so a message
			// sent now is kept until KEDA starts a pod.
			awaitActor(t, ctx, d, ns, name, 2*time.Minute, "Ready", conditionTrue("Ready"))
			id := sendExample(t, ctx, b, ns, ex.Actor, run.payload)
			got := awaitResult(t, ctx, end, id, ns, name)
			if fmt.Sprint(got.Payload) != run.want {
				t.Errorf("result %s, want payload %s", got.Raw, run.want)
			}
		})
	}
}

// awaitResult waits for the message's result at the end of its route;
// on timeout it shows the actor's pods and the end of their logs.
func awaitResult(t *testing.T, ctx context.Context, end *collector, id, ns, name string) testenv.Envelope {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		for _, m := range end.b.Take(t, ctx, end.actor) {
			if m.ID == id {
				return m
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("no result of %s on asya-%s 3 min after it was sent\n%s", id, end.actor, podReport(ctx, ns, "asya.sh/asya="+name))
	return testenv.Envelope{}
}

// conditionTrue passes on a status whose condition of that type is True.
func conditionTrue(typ string) func(testenv.Obj) error {
	return func(s testenv.Obj) error {
		conds, _ := s["conditions"].([]any)
		for _, c := range conds {
			if testenv.Str(c.(testenv.Obj), "type") == typ && testenv.Str(c.(testenv.Obj), "status") == "True" {
				return nil
			}
		}
		return fmt.Errorf("condition %s not True", typ)
	}
}

// nodeBrokerOf is the broker of the example's transport: its own, or the
// flat actors' transport of the node's service (rabbitmq).
func nodeBrokerOf(t *testing.T, actor testenv.Obj) testenv.NodeBroker {
	t.Helper()
	transport := testenv.Str(actor, "spec", "transport")
	if transport == "" {
		transport = "rabbitmq"
	}
	for _, b := range nodeBrokers {
		if b.Transport == transport {
			return b
		}
	}
	t.Fatalf("no node broker for transport %q", transport)
	return testenv.NodeBroker{}
}

// routeEnd collects what reaches the end of the actor's routes: its
// namespace's sink for a flat actor, asya-happy-end for a 0.3 one. Made
// before the actor, as the broker's own queue would be.
func routeEnd(t *testing.T, ctx context.Context, b testenv.NodeBroker, ns string, actor testenv.Obj) *collector {
	if testenv.Str(actor, "spec", "actor") != "" {
		return flatEnd(t, ctx, b, ns, "x-sink")
	}
	return newCollector(t, ctx, b, "happy-end")
}

// sendExample puts one message on the actor's queue and returns its id.
func sendExample(t *testing.T, ctx context.Context, b testenv.NodeBroker, ns string, actor, payload testenv.Obj) string {
	t.Helper()
	if flat := testenv.Str(actor, "spec", "actor"); flat != "" {
		m := flatMessage(payload, flat)
		sendFlat(t, ctx, b, ns, flat, m)
		return m["id"].(string)
	}
	m := message(testenv.Str(actor, "metadata", "name"), payload)
	b.Send(t, ctx, m.Route.Actors[0], m)
	return m.ID
}
