//go:build e2e

package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// Flat actors on the node: the manifests upstream Asya 0.5+/1.x users
// write, run with the test sidecar in its current mode and the HTTP
// runtime, on queues asya-<namespace>-<actor>.

// flatActor is a flat actor of the tier's runtime image, scaling off.
func flatActor(ns, name, transport, handler string) testenv.Obj {
	spec := testenv.Obj{"actor": name, "image": testenv.NodeImage("runtime"), "handler": handler,
		"scaling": testenv.Obj{"enabled": false}, "replicas": 1, "resiliency": testenv.Obj{"actorTimeout": "30s"}}
	if transport != "" {
		spec["transport"] = transport
	}
	return testenv.Obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": testenv.Obj{"name": name, "namespace": ns}, "spec": spec}
}

// flatMessage is a current-generation envelope for the route given.
func flatMessage(payload testenv.Obj, route ...string) testenv.Obj {
	return testenv.Obj{"id": testenv.UniqueName("flat"), "route": testenv.Obj{"prev": []any{}, "curr": route[0], "next": route[1:]},
		"headers": testenv.Obj{}, "payload": payload}
}

// sendFlat puts m on a flat actor's queue as a sidecar of its namespace
// would: on RabbitMQ to the namespace's exchange keyed by the actor, on
// SQS to the queue asya-<namespace>-<actor>.
func sendFlat(t *testing.T, ctx context.Context, b testenv.NodeBroker, ns, actor string, m testenv.Obj) {
	t.Helper()
	switch b.Transport {
	case "rabbitmq":
		publishVia(t, ctx, testenv.RabbitURL(), nodeExchange+"-"+ns, actor, m)
		return
	case "pubsub":
		testenv.PubSubPublish(t, ctx, ns+"-"+actor, []byte(testenv.MustJSON(m)))
		return
	}
	url := testenv.SQSQueueURL(t, ctx, "asya-"+ns+"-"+actor)
	if _, err := testenv.SQSClient().SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(testenv.MustJSON(m))}); err != nil {
		t.Fatalf("send to %s: %v", url, err)
	}
}

// flatEnd collects what reaches one of the namespace's queues; the
// collector names queues asya-<its actor>.
func flatEnd(t *testing.T, ctx context.Context, b testenv.NodeBroker, ns, actor string) *collector {
	return newCollector(t, ctx, b, ns+"-"+actor)
}

// TestNodeFlatPipeline: a two-actor pipeline ends in the namespace's sink,
// and a handler's error reaches its sump with the traceback, on RabbitMQ,
// SQS and Pub/Sub.
func TestNodeFlatPipeline(t *testing.T) {
	d := nodeDriver(t)
	for _, b := range append(slices.Clip(nodeBrokers), testenv.PubSubNodeBroker) {
		t.Run(b.Transport, func(t *testing.T) {
			ctx := context.Background()
			ns := nodeNamespace(t, ctx, b.Name("node-e2e-flat-"+b.Transport), nil)
			sink, sump := flatEnd(t, ctx, b, ns, "x-sink"), flatEnd(t, ctx, b, ns, "x-sump")
			transport := ""
			if b.Transport != "rabbitmq" {
				transport = b.Transport // the node service's flat actors default to rabbitmq
			}
			runReadyActor(t, ctx, d, flatActor(ns, "first", transport, "handlers.process"))
			runReadyActor(t, ctx, d, flatActor(ns, "second", transport, "handlers.process"))
			queueID := "asya-" + ns + "-first"
			if b.Transport == "sqs" {
				queueID = "arn:aws:sqs:us-east-1:000000000000:" + queueID // the node service's region and account
			}
			awaitStatus(t, ctx, d, ns, "first", "Running", 30*time.Second, func(s testenv.Obj) error {
				if testenv.Str(s, "phase") != "Ready" || testenv.Str(s, "queueIdentifier") != queueID {
					return fmt.Errorf("phase %q, queueIdentifier %q", testenv.Str(s, "phase"), testenv.Str(s, "queueIdentifier"))
				}
				return nil
			})

			ok := flatMessage(testenv.Obj{"n": 1}, "first", "second")
			start := time.Now()
			sendFlat(t, ctx, b, ns, "first", ok)
			got := sink.await(t, ctx, 30*time.Second, ok["id"].(string))[ok["id"].(string)][0]
			env.Timed("node: flat "+b.Transport+" two actors → sink", start)
			if raw := string(got.Raw); !strings.Contains(raw, `"prev":["first","second"]`) || !strings.Contains(raw, `"n":1`) {
				t.Errorf("sink got %s, want the payload passed through first and second", raw)
			}
			bad := flatMessage(testenv.Obj{"fail": true}, "first", "second")
			sendFlat(t, ctx, b, ns, "first", bad)
			failed := sump.await(t, ctx, 30*time.Second, bad["id"].(string))[bad["id"].(string)][0]
			if raw := string(failed.Raw); !strings.Contains(raw, "handler refused") || !strings.Contains(raw, "Traceback") {
				t.Errorf("sump got %s, want the handler's error with its traceback", raw)
			}
		})
	}
}

// TestNodeFlatGenerator: a generator handler's three yields become three
// messages on the next actor's queue, which runs no replicas.
func TestNodeFlatGenerator(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	b := nodeBrokers[0]
	ns := nodeNamespace(t, ctx, "node-e2e-flat-generator", nil)
	collect := flatActor(ns, "collect", "", "handlers.process")
	testenv.MapAt(collect, "spec")["replicas"] = 0
	runActor(t, ctx, d, collect)
	runReadyActor(t, ctx, d, flatActor(ns, "fan", "", "handlers.fan"))
	next := flatEnd(t, ctx, b, ns, "collect")

	m := flatMessage(testenv.Obj{"n": 3}, "fan", "collect")
	sendFlat(t, ctx, b, ns, "fan", m)
	deadline := time.Now().Add(30 * time.Second)
	var parts []testenv.Envelope
	for len(parts) < 3 && time.Now().Before(deadline) {
		for _, e := range b.Take(t, ctx, next.actor) {
			parts = append(parts, e)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(parts) != 3 {
		t.Fatalf("asya-%s-collect got %d messages, want the generator's 3", ns, len(parts))
	}
	for i, p := range parts {
		if !strings.Contains(string(p.Raw), `"part":`) || !strings.Contains(string(p.Raw), `"curr":"collect"`) {
			t.Errorf("message %d: %s, want a part routed to collect", i, p.Raw)
		}
	}
}

// TestNodeFlatNamespacesApart: two namespaces with an actor of the same
// name on one RabbitMQ each get only their own messages.
func TestNodeFlatNamespacesApart(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	b := nodeBrokers[0]
	var namespaces []string
	sinks := map[string]*collector{}
	for _, name := range []string{"node-e2e-flat-team-a", "node-e2e-flat-team-b"} {
		ns := nodeNamespace(t, ctx, name, nil)
		namespaces = append(namespaces, ns)
		sinks[ns] = flatEnd(t, ctx, b, ns, "x-sink")
		runReadyActor(t, ctx, d, flatActor(ns, "echo", "", "handlers.process"))
	}
	for _, ns := range namespaces {
		m := flatMessage(testenv.Obj{"from": ns}, "echo")
		sendFlat(t, ctx, b, ns, "echo", m)
		got := sinks[ns].await(t, ctx, 30*time.Second, m["id"].(string))
		if len(got[m["id"].(string)]) != 1 {
			t.Errorf("%s's sink got %d copies", ns, len(got[m["id"].(string)]))
		}
	}
	time.Sleep(2 * time.Second) // anything misrouted would have arrived by now
	for _, ns := range namespaces {
		for _, e := range b.Take(t, ctx, ns+"-x-sink") {
			t.Errorf("%s's sink got another message: %s", ns, e.Raw)
		}
		for id, got := range sinks[ns].got {
			if !strings.Contains(string(got[0].Raw), `"from":"`+ns+`"`) {
				t.Errorf("%s's sink got %s from elsewhere: %s", ns, id, got[0].Raw)
			}
		}
	}
}

// TestNodeFlatScalesFromZero: a flat actor with upstream's scaling
// defaults (on, from zero) naps with no pod, wakes for a message, and
// naps again with no pod.
func TestNodeFlatScalesFromZero(t *testing.T) {
	testenv.NeedKEDA(t)
	d := nodeDriver(t)
	ctx := context.Background()
	b := nodeBrokers[0]
	ns := nodeNamespace(t, ctx, "node-e2e-flat-scaling", nil)
	sink := flatEnd(t, ctx, b, ns, "x-sink")
	a := flatActor(ns, "sleepy", "", "handlers.process")
	testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"pollingInterval": 2, "cooldownPeriod": 6}
	delete(testenv.MapAt(a, "spec"), "replicas")
	runActor(t, ctx, d, a)
	noPods := func(s testenv.Obj) error {
		pods, _ := env.Cluster.Client.List(ctx, podsGVR, ns, "asya.sh/asya=sleepy")
		if len(pods) > 0 || testenv.Str(s, "phase") != "Napping" {
			return fmt.Errorf("%d pods, phase %q", len(pods), testenv.Str(s, "phase"))
		}
		return nil
	}
	awaitStatus(t, ctx, d, ns, "sleepy", "Napping", 2*time.Minute, noPods)
	m := flatMessage(testenv.Obj{"wake": true}, "sleepy")
	start := time.Now()
	sendFlat(t, ctx, b, ns, "sleepy", m)
	sink.await(t, ctx, 2*time.Minute, m["id"].(string))
	env.Timed("node: flat actor from zero pods → result in the sink", start)
	awaitStatus(t, ctx, d, ns, "sleepy", "Napping", 3*time.Minute, noPods)
	env.Timed("node: flat actor from zero pods → back to zero", start)
}

// TestNodeFlatRestricted: a flat actor runs in a namespace that enforces
// Pod Security "restricted", with the securityContext asya-sync gives its
// runtime (the image runs as a non-root user), and answers.
func TestNodeFlatRestricted(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	b := nodeBrokers[0]
	ns := nodeNamespace(t, ctx, "node-e2e-flat-restricted", testenv.Obj{"pod-security.kubernetes.io/enforce": "restricted"})
	sink := flatEnd(t, ctx, b, ns, "x-sink")
	runReadyActor(t, ctx, d, flatActor(ns, "hardened", "", "handlers.process"))
	m := flatMessage(testenv.Obj{"n": 1}, "hardened")
	sendFlat(t, ctx, b, ns, "hardened", m)
	sink.await(t, ctx, 30*time.Second, m["id"].(string))
}

// TestNodeFlatRetries: a handler that fails twice, then answers, run by
// the test sidecar as either line (ASYA_TEST_SIDECAR_LINE in the actor's
// sidecar.env) with either form of spec.resiliency: asya-sync gives every
// sidecar both forms, the one written and the other translated, so each
// line retries by either. On SQS the retries wait 1 s, then 2 s, and the
// third call's result reaches the sink. RabbitMQ cannot delay a message,
// so there the first error ends at once, in the sump (0.5) or the sink
// with phase failed (1.x). An error the spec names not to retry ends at
// the first call on both brokers.
func TestNodeFlatRetries(t *testing.T) {
	d := nodeDriver(t)
	forms := []struct {
		name       string
		resiliency testenv.Obj
	}{
		{"retry", testenv.Obj{"actorTimeout": "30s", "nonRetryableErrors": []any{"KeyError"}, "retry": testenv.Obj{"policy": "exponential",
			"maxAttempts": 3, "initialInterval": "1s", "maxInterval": "10s", "backoffCoefficient": 2, "jitter": false}}},
		{"policies", testenv.Obj{"actorTimeout": "30s",
			"policies": testenv.Obj{"default": testenv.Obj{"maxAttempts": 3, "backoff": "exponential", "initialDelay": "1s", "maxInterval": "10s"},
				"hard-fail": testenv.Obj{"maxAttempts": 1}},
			"rules": []any{testenv.Obj{"errors": []any{"KeyError"}, "policy": "hard-fail"}}}},
	}
	lines := []struct{ prefix, line, failedEnd, notRetried string }{
		{"r05", "0.5", "x-sump", "NonRetryableFailure"},
		{"r1x", "1.x", "x-sink", "PolicyExhausted"},
	}
	for _, b := range nodeBrokers {
		t.Run(b.Transport, func(t *testing.T) {
			ctx := context.Background()
			ns := nodeNamespace(t, ctx, b.Name("node-e2e-flat-retries-"+b.Transport), nil)
			ends := map[string]*collector{"x-sink": flatEnd(t, ctx, b, ns, "x-sink"), "x-sump": flatEnd(t, ctx, b, ns, "x-sump")}
			transport := ""
			if b.Transport != "rabbitmq" {
				transport = b.Transport
			}
			var names []string
			for _, l := range lines {
				for _, f := range forms {
					a := flatActor(ns, l.prefix+"-"+f.name, transport, "handlers.flaky")
					spec := testenv.MapAt(a, "spec")
					spec["resiliency"] = f.resiliency
					spec["sidecar"] = testenv.Obj{"env": []any{testenv.Obj{"name": "ASYA_TEST_SIDECAR_LINE", "value": l.line}}}
					runActor(t, ctx, d, a)
					names = append(names, l.prefix+"-"+f.name)
				}
			}
			for _, name := range names {
				if _, err := waitPodsReady(ctx, ns, "asya.sh/asya="+name, 1, 2*time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			var ids []string
			for _, l := range lines {
				for _, f := range forms {
					name := l.prefix + "-" + f.name
					t.Run(name, func(t *testing.T) {
						ok := flatMessage(testenv.Obj{"key": testenv.UniqueName("ok"), "failures": 2}, name)
						start := time.Now()
						sendFlat(t, ctx, b, ns, name, ok)
						id := ok["id"].(string)
						ids = append(ids, id)
						if b.Transport == "sqs" {
							got := flatStatus(t, ends["x-sink"].await(t, ctx, time.Minute, id)[id][0])
							took := time.Since(start)
							env.Timed(fmt.Sprintf("node: flat %s retried twice → sink", name), start)
							if got.Status.Phase != "succeeded" || got.Payload.Calls != 3 || took < 3*time.Second {
								t.Errorf("sink got %s after %v; want it succeeded at the third call, after the retries' 1 s and 2 s", got.raw, took)
							}
						} else {
							got := flatStatus(t, ends[l.failedEnd].await(t, ctx, 30*time.Second, id)[id][0])
							if got.Status.Phase != "failed" || got.Status.Reason != "RuntimeError" || got.Status.Attempt != 2 {
								t.Errorf("%s got %s; want it failed at once (RuntimeError), the retry not delayable", l.failedEnd, got.raw)
							}
						}
						hard := flatMessage(testenv.Obj{"key": testenv.UniqueName("hard"), "failures": 5, "error": "KeyError"}, name)
						sendFlat(t, ctx, b, ns, name, hard)
						id = hard["id"].(string)
						ids = append(ids, id)
						got := flatStatus(t, ends[l.failedEnd].await(t, ctx, 30*time.Second, id)[id][0])
						if got.Status.Phase != "failed" || got.Status.Reason != l.notRetried || got.Status.Attempt != 1 {
							t.Errorf("%s got %s; want KeyError failed at the first call (%s)", l.failedEnd, got.raw, l.notRetried)
						}
					})
				}
			}
			time.Sleep(2 * time.Second) // a second copy anywhere would have arrived by now
			for _, c := range ends {
				c.await(t, ctx, 0)
			}
			for _, id := range ids {
				if n := len(ends["x-sink"].got[id]) + len(ends["x-sump"].got[id]); n != 1 {
					t.Errorf("%s reached the sink and the sump %d times, want once", id, n)
				}
			}
		})
	}
}

// flatEnded is what the tests read of an envelope that reached the sink
// or the sump.
type flatEnded struct {
	Status struct {
		Phase, Reason string
		Attempt       int
	}
	Payload struct{ Calls int }
	raw     string
}

func flatStatus(t *testing.T, e testenv.Envelope) flatEnded {
	t.Helper()
	var got flatEnded
	if err := json.Unmarshal(e.Raw, &got); err != nil {
		t.Fatalf("%s: %v", e.Raw, err)
	}
	got.raw = string(e.Raw)
	return got
}

// TestNodeFlatQueueConflict: namespace X's actor b-doubler and namespace
// X-b's actor doubler name one queue, asya-X-b-doubler. X-b's, first,
// owns it; X's stands by, QueueConflict naming the owner, with no pod and
// no route into the queue, so a message for the owner waits there for the
// owner alone. Deleting X's actor leaves the queue and the message, which
// the owner then processes to its namespace's sink.
func TestNodeFlatQueueConflict(t *testing.T) {
	d := nodeDriver(t)
	ctx := context.Background()
	b := nodeBrokers[0]
	rabbit := testenv.Rabbit(t)
	x := nodeNamespace(t, ctx, "node-e2e-flat-own", nil)
	xb := nodeNamespace(t, ctx, x+"-b", nil)
	queue := "asya-" + xb + "-doubler"
	sink := flatEnd(t, ctx, b, xb, "x-sink")

	owner := flatActor(xb, "doubler", "", "handlers.process")
	testenv.MapAt(owner, "spec")["replicas"] = 0 // its message waits in the queue
	runActor(t, ctx, d, owner)
	awaitActor(t, ctx, d, xb, "doubler", time.Minute, "its queue ensured", func(s testenv.Obj) error {
		if reason, message := condition(s, "TransportReady"); reason != "QueueReady" {
			return fmt.Errorf("TransportReady %s: %s", reason, message)
		}
		return nil
	})

	runActor(t, ctx, d, flatActor(x, "b-doubler", "", "handlers.process"))
	awaitStatus(t, ctx, d, x, "b-doubler", "TransportError", time.Minute, func(s testenv.Obj) error {
		if reason, message := condition(s, "TransportReady"); reason != "QueueConflict" || !strings.Contains(message, "actor doubler of namespace "+xb) {
			return fmt.Errorf("TransportReady %s: %s", reason, message)
		}
		return nil
	})
	deployments := testenv.GVR{APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
	if dep, err := env.Cluster.Client.Get(ctx, deployments, x, "b-doubler"); err != nil || fmt.Sprint(testenv.Field(dep, "spec", "replicas")) != "0" {
		t.Fatalf("%s/b-doubler's Deployment: %v, replicas %v; want 0", x, err, testenv.Field(dep, "spec", "replicas"))
	}

	m := flatMessage(testenv.Obj{"n": 1}, "doubler")
	sendFlat(t, ctx, b, xb, "doubler", m)
	// X's route to b-doubler ends nowhere: its sync bound nothing.
	sendFlat(t, ctx, b, x, "b-doubler", flatMessage(testenv.Obj{"n": 2}, "b-doubler"))
	time.Sleep(time.Second)
	testenv.WantMessages(t, rabbit, queue, 1, "with the owner scaled to zero")
	if pods, _ := env.Cluster.Client.List(ctx, podsGVR, x, "asya.sh/asya=b-doubler"); len(pods) > 0 {
		t.Fatalf("%s/b-doubler, standing by, has %d pods", x, len(pods))
	}

	if err := env.Cluster.Client.Delete(ctx, d.Parent, x, "b-doubler"); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, ctx, d, x, "b-doubler")
	testenv.WantMessages(t, rabbit, queue, 1, "after "+x+"/b-doubler was deleted")

	setReplicas(t, ctx, d, xb, "doubler", 1)
	got := sink.await(t, ctx, 2*time.Minute, m["id"].(string))[m["id"].(string)][0]
	if !strings.Contains(string(got.Raw), `"n":1`) {
		t.Errorf("%s's sink got %s, want the owner's message", xb, got.Raw)
	}
}

// awaitGone waits until the actor is finalized and gone.
func awaitGone(t *testing.T, ctx context.Context, d *testenv.Driver, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := env.Cluster.Client.Get(ctx, d.Parent, ns, name); testenv.IsStatus(err, 404) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("actor %s/%s still there a minute after delete: %s", ns, name, testenv.MustJSON(actorStatus(t, ctx, d, ns, name)))
}

// setReplicas sets a flat actor's spec.replicas.
func setReplicas(t *testing.T, ctx context.Context, d *testenv.Driver, ns, name string, n int) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		a, err := env.Cluster.Client.Get(ctx, d.Parent, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		testenv.MapAt(a, "spec")["replicas"] = n
		_, err = env.Cluster.Client.Do(ctx, "PUT", d.Parent.Path(ns, name), a, "application/json")
		if err == nil {
			return
		}
		if !testenv.IsStatus(err, 409) || attempt > 5 {
			t.Fatalf("update %s: %v", name, err)
		}
	}
}
