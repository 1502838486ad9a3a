//go:build e2e

package api

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

const scalingNS = "e2e-keda"

// queueFeeder puts messages on an actor's queue and takes them off again,
// and breaks the TriggerAuthentication spec of the transport's actors.
type queueFeeder struct {
	transport string
	name      func(string) string // the actor's name for this run
	publish   func(t *testing.T, ctx context.Context, queue string, n int)
	drain     func(t *testing.T, ctx context.Context, queue string)
	breakAuth func(spec testenv.Obj)
}

var feeders = []queueFeeder{
	{
		transport: "rabbitmq",
		name:      func(n string) string { return n },
		publish: func(t *testing.T, ctx context.Context, queue string, n int) {
			conn := testenv.Rabbit(t)
			defer conn.Close()
			for range n {
				testenv.Publish(t, conn, queue)
			}
		},
		drain: func(t *testing.T, ctx context.Context, queue string) {
			testenv.WithChannel(t, func(ch *amqp.Channel) error {
				if _, err := ch.QueuePurge(queue, false); err != nil {
					return fmt.Errorf("purge %s: %w", queue, err)
				}
				return nil
			})
		},
		// The password from a key the Secret does not have.
		breakAuth: func(spec testenv.Obj) {
			for _, ref := range spec["secretTargetRef"].([]any) {
				ref.(testenv.Obj)["key"] = "no-such-key"
			}
		},
	},
	{
		transport: "sqs-static",
		// SQS refuses a queue name deleted within the last 60 s.
		name: func(n string) string { return n + "-" + env.RunID },
		publish: func(t *testing.T, ctx context.Context, queue string, n int) {
			url := testenv.SQSQueueURL(t, ctx, queue)
			for i := range n {
				if _, err := testenv.SQSClient().SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprint(i))}); err != nil {
					t.Fatalf("send to %s: %v", queue, err)
				}
			}
		},
		// The emulator's PurgeQueue leaves the queue's counts as they were,
		// so the messages are received and deleted, with a short wait: the
		// queue's own is asya-sync's 20 s long poll.
		drain: func(t *testing.T, ctx context.Context, queue string) {
			url := testenv.SQSQueueURL(t, ctx, queue)
			for {
				out, err := testenv.SQSClient().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					t.Fatalf("receive from %s: %v", queue, err)
				}
				if len(out.Messages) == 0 {
					return
				}
				for _, m := range out.Messages {
					if _, err := testenv.SQSClient().DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
						t.Fatalf("delete from %s: %v", queue, err)
					}
				}
			}
		},
		// The keys from variables the sidecar does not have.
		breakAuth: func(spec testenv.Obj) {
			for _, e := range spec["env"].([]any) {
				e.(testenv.Obj)["name"] = "NOT_" + testenv.Str(e.(testenv.Obj), "name")
			}
		},
	},
}

// scalingActor is an actor KEDA scales from zero, polling every
// pollSeconds and scaling to zero cooldown seconds after its queue drains.
func scalingActor(t *testing.T, name, transport string, pollSeconds, cooldown int) testenv.Obj {
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), scalingNS)
	testenv.MapAt(a, "metadata")["name"] = name
	spec := testenv.MapAt(a, "spec")
	spec["transport"] = transport
	spec["scaling"] = testenv.Obj{"enabled": true, "minReplicas": 0, "maxReplicas": 3, "queueLength": 5,
		"pollingInterval": pollSeconds, "cooldownPeriod": cooldown}
	return a
}

// deployment is the actor's Deployment as stored, and where it is.
func deployment(t *testing.T, ctx context.Context, ns, name string) (testenv.Obj, testenv.GVR) {
	t.Helper()
	dep, err := env.Cluster.Client.ByKind(ctx, "apps/v1", "Deployment")
	if err != nil {
		t.Fatal(err)
	}
	d, err := env.Cluster.Client.Get(ctx, dep, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return d, dep
}

// replicas is the workload's spec.replicas, as KEDA sets it.
func replicas(t *testing.T, ctx context.Context, name string) int {
	d, _ := deployment(t, ctx, scalingNS, name)
	n, _ := testenv.Field(d, "spec", "replicas").(float64)
	return int(n)
}

// syncingUntil runs a driver pass every second, as Metacontroller's
// resyncs and watch events would, until check returns nil or within is
// over; it returns how long that took. check's error says what it saw.
func syncingUntil(t *testing.T, ctx context.Context, d *testenv.Driver, ns, name string, within time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if _, err := d.Reconcile(ctx, ns, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
		err := check()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(time.Second)
	}
}

// want is nil when got is want, else an error saying what got is.
func want[T comparable](what string, got, want T) error {
	if got == want {
		return nil
	}
	return fmt.Errorf("%s is %v", what, got)
}

// reportRunning plays the Deployment controller: n replicas, all ready.
func reportRunning(t *testing.T, ctx context.Context, ns, name string, n int) {
	t.Helper()
	d, dep := deployment(t, ctx, ns, name)
	if err := putStatus(ctx, dep.Path(ns, name), testenv.Obj{"observedGeneration": testenv.Field(d, "metadata", "generation"),
		"replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n}); err != nil {
		t.Fatal(err)
	}
}

// TestKEDAScalesFromZero is what users run Asya for, with the real KEDA:
// an idle actor scales to zero, messages on its queue bring it up within
// two polling intervals and keep it up while Metacontroller keeps syncing,
// and once the queue drains it goes back to zero after the cooldown.
func TestKEDAScalesFromZero(t *testing.T) {
	testenv.NeedKEDA(t)
	const poll, cooldown = 3, 6
	for _, f := range feeders {
		t.Run(f.transport, func(t *testing.T) {
			ctx := testenv.CtxFor(t, 4*time.Minute)
			testenv.EnsureNamespace(t, ctx, scalingNS, true)
			name := f.name("scale-" + f.transport)
			createActor(t, ctx, scalingActor(t, name, f.transport, poll, cooldown))
			queue := "asya-" + name
			d := env.Driver

			ready := syncingUntil(t, ctx, d, scalingNS, name, time.Minute, "ScaledObject Ready", func() error {
				return conditionIs(soCondition(t, ctx, scalingNS, name), "True")
			})
			checkHPA(t, ctx, name)
			atZero := func() error { return want("spec.replicas", replicas(t, ctx, name), 0) }
			idle := syncingUntil(t, ctx, d, scalingNS, name, time.Minute, "idle actor at 0 replicas", atZero)
			t.Logf("%s: ScaledObject Ready after %.1f s, idle at zero %.1f s later", f.transport, ready.Seconds(), idle.Seconds())

			f.publish(t, ctx, queue, 6)
			up := syncingUntil(t, ctx, d, scalingNS, name, 2*poll*time.Second, "scale from zero within two polling intervals", func() error {
				if n := replicas(t, ctx, name); n < 1 {
					return fmt.Errorf("spec.replicas is %d", n)
				}
				return nil
			})
			t.Logf("%s: scaled from zero %.1f s after the messages (polling every %d s)", f.transport, up.Seconds(), poll)
			// Metacontroller keeps syncing; the workload stays up.
			for range 3 {
				if _, err := d.Reconcile(ctx, scalingNS, name); err != nil {
					t.Fatal(err)
				}
				if n := replicas(t, ctx, name); n < 1 {
					t.Fatalf("scaled back to %d while messages wait", n)
				}
				time.Sleep(time.Second)
			}
			if a := testenv.GetActor(t, ctx, scalingNS, name); testenv.Str(a, "status", "status") == "ScalingError" {
				t.Errorf("status ScalingError while KEDA scales: %v", conditions(a)["ScalingReady"])
			}

			f.drain(t, ctx, queue)
			down := syncingUntil(t, ctx, d, scalingNS, name, time.Duration(cooldown+3*poll)*time.Second, "back to zero after the cooldown", atZero)
			t.Logf("%s: back to zero %.1f s after the drain (cooldown %d s)", f.transport, down.Seconds(), cooldown)
		})
	}
}

// checkHPA compares KEDA's HPA with the actor's ScaledObject: bounds
// (KEDA keeps an HPA at one replica at least) and behaviour.
func checkHPA(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	k := env.Cluster.Client
	r := testenv.GVR{APIVersion: "autoscaling/v2", Resource: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler", Namespaced: true}
	hpa, err := k.Get(ctx, r, scalingNS, "keda-hpa-"+name)
	if err != nil {
		t.Fatalf("KEDA's HPA: %v", err)
	}
	so, err := k.Get(ctx, testenv.GVR{APIVersion: "keda.sh/v1alpha1", Resource: "scaledobjects", Kind: "ScaledObject", Namespaced: true}, scalingNS, name)
	if err != nil {
		t.Fatal(err)
	}
	if got := testenv.Field(hpa, "spec", "minReplicas"); got != float64(1) {
		t.Errorf("HPA minReplicas %v, want 1 (KEDA scales below that itself)", got)
	}
	if got, want := testenv.Field(hpa, "spec", "maxReplicas"), testenv.Field(so, "spec", "maxReplicaCount"); got != want {
		t.Errorf("HPA maxReplicas %v, want the ScaledObject's %v", got, want)
	}
	want := testenv.Field(so, "spec", "advanced", "horizontalPodAutoscalerConfig", "behavior")
	if got := testenv.Field(hpa, "spec", "behavior"); !testenv.Subset(want, got) {
		t.Errorf("HPA behavior %s, want the ScaledObject's %s", testenv.MustJSON(got), testenv.MustJSON(want))
	}
}

// TestScalingStatusFollowsKEDA breaks an actor's TriggerAuthentication on
// purpose, for each transport: KEDA cannot read the queue, and the actor
// says so with KEDA's words. Applied right again, KEDA recovers and the
// actor says ScalingReady.
func TestScalingStatusFollowsKEDA(t *testing.T) {
	testenv.NeedKEDA(t)
	for _, f := range feeders {
		t.Run(f.transport, func(t *testing.T) {
			ctx := testenv.CtxFor(t, 3*time.Minute)
			testenv.EnsureNamespace(t, ctx, scalingNS, true)
			name := f.name("verdict-" + f.transport)
			broken := *env.Driver
			broken.Answered = func(hook string, _ testenv.Obj, resp *testenv.HookResponse) {
				for _, c := range resp.Children {
					if testenv.Str(c, "kind") == "TriggerAuthentication" {
						f.breakAuth(testenv.MapAt(c, "spec"))
					}
				}
			}
			if _, err := env.Cluster.Client.Create(ctx, scalingActor(t, name, f.transport, 2, 30), false); err != nil {
				t.Fatal(err)
			}
			if _, err := broken.Converge(ctx, scalingNS, name, 8); err != nil {
				t.Fatal(err)
			}
			// KEDA cannot scale it, so the workload keeps its one replica,
			// which the Deployment controller reports running.
			reportRunning(t, ctx, scalingNS, name, 1)
			var kedaSays string
			syncingUntil(t, ctx, &broken, scalingNS, name, time.Minute, "KEDA refuses the broken TriggerAuthentication", func() error {
				c := soCondition(t, ctx, scalingNS, name)
				kedaSays = testenv.Str(c, "message")
				return conditionIs(c, "False")
			})
			syncingUntil(t, ctx, &broken, scalingNS, name, 30*time.Second, "ScalingError in the actor's status", func() error {
				a := testenv.GetActor(t, ctx, scalingNS, name)
				if err := want("status", testenv.Str(a, "status", "status"), "ScalingError"); err != nil {
					return fmt.Errorf("%w, ScalingReady %s", err, testenv.MustJSON(conditions(a)["ScalingReady"]))
				}
				return nil
			})
			got := conditions(testenv.GetActor(t, ctx, scalingNS, name))["ScalingReady"]
			if testenv.Str(got, "status") != "False" || !strings.Contains(testenv.Str(got, "message"), firstSentence(kedaSays)) {
				t.Errorf("ScalingReady %v, want False with KEDA's message %q", got, kedaSays)
			}
			t.Logf("%s, broken: %s", f.transport, testenv.Str(got, "message"))

			syncingUntil(t, ctx, env.Driver, scalingNS, name, time.Minute, "ScalingReady=True once the TriggerAuthentication is right", func() error {
				return conditionIs(conditions(testenv.GetActor(t, ctx, scalingNS, name))["ScalingReady"], "True")
			})
		})
	}
}

// firstSentence is the start of KEDA's message that the actor's status
// must carry: the status may add context around it.
func firstSentence(msg string) string {
	if i := strings.Index(msg, ": "); i > 0 {
		return msg[:i]
	}
	return msg
}

// TestIRSAActorUnderKEDA: KEDA's webhooks admit an IRSA actor's
// ScaledObject and TriggerAuthentication (pod identity of the workload),
// and the actor's ScalingReady says what KEDA says of it. Here no AWS web
// identity exists, so KEDA cannot assume the role.
func TestIRSAActorUnderKEDA(t *testing.T) {
	testenv.NeedKEDA(t)
	ctx := testenv.CtxFor(t, 2*time.Minute)
	testenv.EnsureNamespace(t, ctx, scalingNS, true)
	// Its own name: an actor of the fixture's name in another namespace owns that queue.
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "sqs-irsa.yaml"), scalingNS)
	testenv.MapAt(a, "metadata")["name"] = "irsa-" + env.RunID
	name := testenv.Str(a, "metadata", "name")
	createActor(t, ctx, a)
	kedaSays, msg := scalingFollowsKEDA(t, ctx, scalingNS, name)
	got := conditions(testenv.GetActor(t, ctx, scalingNS, name))["ScalingReady"]
	if kedaSays == "False" && !strings.Contains(testenv.Str(got, "message"), firstSentence(msg)) {
		t.Errorf("ScalingReady message %q, want KEDA's %q", testenv.Str(got, "message"), msg)
	}
	t.Logf("KEDA on the IRSA actor: Ready=%s %q; the actor: %s", kedaSays, msg, testenv.MustJSON(got))
}

// TestKEDAWebhooksAdmitChildren: the ScaledObject and TriggerAuthentication
// of each transport go through KEDA's validating webhooks, registered with
// failurePolicy Fail, on create and on update, and are admitted (a refusal
// would fail the driver's apply).
func TestKEDAWebhooksAdmitChildren(t *testing.T) {
	testenv.NeedKEDA(t)
	for _, f := range feeders {
		t.Run(f.transport, func(t *testing.T) {
			ctx := testenv.CtxFor(t, time.Minute)
			testenv.EnsureNamespace(t, ctx, scalingNS, true)
			name := f.name("admitted-" + f.transport)
			before := webhookCalls(t)
			a := scalingActor(t, name, f.transport, 5, 30)
			createActor(t, ctx, a)
			// An update of both: a new bound changes the ScaledObject, and
			// the pass re-applies the TriggerAuthentication.
			testenv.MapAt(a, "spec", "scaling")["maxReplicas"] = 4
			if _, err := env.Cluster.Client.Apply(ctx, a, "e2e"); err != nil {
				t.Fatal(err)
			}
			converge(t, ctx, scalingNS, name)
			after := webhookCalls(t)
			for path := range after {
				if after[path] < before[path]+2 {
					t.Errorf("%s answered %d admission requests for a create and an update, want 2 at least", path, after[path]-before[path])
				}
			}
		})
	}
}

func webhookCalls(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, path := range []string{"/validate-keda-sh-v1alpha1-scaledobject", "/validate-keda-sh-v1alpha1-triggerauthentication"} {
		n, err := env.KEDA.Admitted(path, "200")
		if err != nil {
			t.Fatal(err)
		}
		out[path] = n
	}
	return out
}

// TestExtraTriggers: extra KEDA triggers go into the ScaledObject beside
// the queue's. KEDA's webhooks and operator take a valid one (a cron
// schedule) and the actor is ScalingReady; for a trigger KEDA cannot run
// (an unknown scaler) the actor reports ScalingError in KEDA's words, and
// its workload keeps running.
func TestExtraTriggers(t *testing.T) {
	testenv.NeedKEDA(t)
	for _, tc := range []struct {
		name    string
		trigger testenv.Obj
		ready   string
	}{
		{"cron", testenv.Obj{"type": "cron", "name": "office-hours",
			"metadata": testenv.Obj{"timezone": "Etc/UTC", "start": "0 8 * * *", "end": "0 18 * * *", "desiredReplicas": "1"}}, "True"},
		{"unknown-scaler", testenv.Obj{"type": "no-such-scaler", "name": "mystery", "metadata": testenv.Obj{"x": "y"}}, "False"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testenv.CtxFor(t, 2*time.Minute)
			testenv.EnsureNamespace(t, ctx, scalingNS, true)
			name := "triggers-" + tc.name
			a := scalingActor(t, name, "rabbitmq", 5, 30)
			testenv.MapAt(a, "spec", "scaling")["advanced"] = testenv.Obj{"triggers": []any{tc.trigger}}
			createActor(t, ctx, a)
			reportRunning(t, ctx, scalingNS, name, 1)
			so := soCondition(t, ctx, scalingNS, name)
			syncingUntil(t, ctx, env.Driver, scalingNS, name, time.Minute, "KEDA's verdict", func() error {
				so = soCondition(t, ctx, scalingNS, name)
				return conditionIs(so, tc.ready)
			})
			syncingUntil(t, ctx, env.Driver, scalingNS, name, 30*time.Second, "the actor's ScalingReady follows KEDA", func() error {
				return conditionIs(conditions(testenv.GetActor(t, ctx, scalingNS, name))["ScalingReady"], tc.ready)
			})
			a = testenv.GetActor(t, ctx, scalingNS, name)
			t.Logf("%s: KEDA %s %q; the actor: %s", tc.name, testenv.Str(so, "status"), testenv.Str(so, "message"), testenv.Str(a, "status", "status"))
			if tc.ready == "False" {
				if s := testenv.Str(a, "status", "status"); s != "ScalingError" || !strings.Contains(testenv.Str(conditions(a)["ScalingReady"], "message"), firstSentence(testenv.Str(so, "message"))) {
					t.Errorf("status %s, ScalingReady %s; want ScalingError with KEDA's message", s, testenv.MustJSON(conditions(a)["ScalingReady"]))
				}
				if n := replicas(t, ctx, name); n < 1 {
					t.Errorf("the workload was scaled to %d", n)
				}
			}
		})
	}
}
