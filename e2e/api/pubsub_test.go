//go:build e2e

package api

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// needPubSub skips the test without the Pub/Sub emulator, or fails it
// under ASYA_REQUIRE_INTEGRATION=1 (setup refuses to start then).
func needPubSub(t *testing.T) {
	t.Helper()
	if !env.PubSub {
		t.Skipf("the Pub/Sub emulator is not listening at %s: run .ci/services.sh", testenv.PubSubEndpoint())
	}
}

// pubsubLabels reads the labels of the topic and the subscription of one
// name on the emulator; a missing one is nil.
func pubsubLabels(t *testing.T, ctx context.Context, name string) (topic, sub map[string]string) {
	t.Helper()
	topics, subs := testenv.PubSubAdmin(t, ctx)
	tp, err := topics.GetTopic(ctx, &pb.GetTopicRequest{Topic: testenv.PubSubPath("topics", name)})
	switch {
	case err == nil:
		topic = tp.Labels
		if topic == nil {
			topic = map[string]string{}
		}
	case status.Code(err) != codes.NotFound:
		t.Fatalf("topic %s: %v", name, err)
	}
	sp, err := subs.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: testenv.PubSubPath("subscriptions", name)})
	switch {
	case err == nil:
		sub = sp.Labels
		if sub == nil {
			sub = map[string]string{}
		}
	case status.Code(err) != codes.NotFound:
		t.Fatalf("subscription %s: %v", name, err)
	}
	return topic, sub
}

// TestPubSubActorUnderKEDA: a flat actor on Pub/Sub (the emulator, a
// service account key in a Secret) gets its topic and subscription,
// recorded to its claim, and a ScaledObject with KEDA's gcp-pubsub trigger
// and a TriggerAuthentication of the key, which KEDA's validating webhooks
// (failurePolicy Fail) admit on create and on update, and the actor's
// ScalingReady says what KEDA's operator says of the ScaledObject. KEDA's
// scaler reads Cloud Monitoring, which nothing here emulates, so no
// scaling is shown: the Secret holds no JSON, and the scaler fails to read
// it when it polls, before any request leaves the machine. Finalize
// deletes the topic and the subscription.
func TestPubSubActorUnderKEDA(t *testing.T) {
	testenv.NeedKEDA(t)
	needPubSub(t)
	ctx := testenv.CtxFor(t, 3*time.Minute)
	ns := "e2e-pubsub"
	testenv.EnsureNamespace(t, ctx, ns, false)
	secret := testenv.Obj{"apiVersion": "v1", "kind": "Secret", "metadata": testenv.Obj{"name": "gcp-pubsub", "namespace": ns},
		"stringData": testenv.Obj{"credentials.json": "not a service account key"}}
	if _, err := env.Cluster.Client.Apply(ctx, secret, "e2e"); err != nil {
		t.Fatal(err)
	}
	name := "doubler-" + env.RunID
	queue := "asya-" + ns + "-" + name
	a := testenv.Obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": testenv.Obj{"name": name, "namespace": ns},
		"spec": testenv.Obj{"actor": name, "transport": "pubsub", "image": "python:3.12-slim", "handler": "doubler.handle",
			"scaling": testenv.Obj{"pollingInterval": 5, "maxReplicaCount": 3}}}

	before := webhookCalls(t)
	createActor(t, ctx, a)
	topic, sub := pubsubLabels(t, ctx, queue)
	if topic == nil || sub == nil {
		t.Fatalf("topic %v, subscription %v of %s: want both made; status %s", topic, sub, queue, testenv.MustJSON(testenv.GetActor(t, ctx, ns, name)["status"]))
	}
	for what, labels := range map[string]map[string]string{"topic": topic, "subscription": sub} {
		if labels["asya-sh-owner"] != name || labels["asya-sh-owner-namespace"] != ns {
			t.Errorf("%s labels %v: want the record of %s/%s", what, labels, ns, name)
		}
	}
	for _, end := range []string{"x-sink", "x-sump"} {
		if _, s := pubsubLabels(t, ctx, "asya-"+ns+"-"+end); s == nil {
			t.Errorf("the namespace's %s subscription was not made", end)
		}
	}

	children := childrenOf(t, ctx, ns, name)
	so, ta := children["ScaledObject/"+name], children["TriggerAuthentication/"+name+"-trigger-auth"]
	if so == nil || ta == nil {
		t.Fatalf("children %v: want the ScaledObject and the TriggerAuthentication", testenv.Keys(children))
	}
	trigger := testenv.Field(so, "spec", "triggers").([]any)[0].(testenv.Obj)
	if testenv.Str(trigger, "type") != "gcp-pubsub" || testenv.Str(trigger, "metadata", "subscriptionName") != "projects/"+testenv.PubSubProject+"/subscriptions/"+queue {
		t.Errorf("trigger %s: want gcp-pubsub on the actor's subscription", testenv.MustJSON(trigger))
	}
	if got := testenv.MustJSON(testenv.Field(ta, "spec", "secretTargetRef")); !strings.Contains(got, `"parameter":"GoogleApplicationCredentials"`) {
		t.Errorf("TriggerAuthentication secretTargetRef %s: want GoogleApplicationCredentials from the Secret", got)
	}

	// An update of both: a new bound changes the ScaledObject, and the
	// pass re-applies the TriggerAuthentication.
	testenv.MapAt(a, "spec", "scaling")["maxReplicaCount"] = 4
	if _, err := env.Cluster.Client.Apply(ctx, a, "e2e"); err != nil {
		t.Fatal(err)
	}
	converge(t, ctx, ns, name)
	after := webhookCalls(t)
	for path := range after {
		if after[path] < before[path]+2 {
			t.Errorf("%s answered %d admission requests for a create and an update, want 2 at least", path, after[path]-before[path])
		}
	}

	kedaSays, msg := scalingFollowsKEDA(t, ctx, ns, name)
	t.Logf("KEDA on the Pub/Sub actor: Ready=%s %q; the actor: %s", kedaSays, msg, testenv.MustJSON(conditions(testenv.GetActor(t, ctx, ns, name))["ScalingReady"]))

	deleteAndFinalize(t, ctx, ns, name)
	if topic, sub := pubsubLabels(t, ctx, queue); topic != nil || sub != nil {
		t.Errorf("after finalize: topic %v, subscription %v; want both deleted", topic, sub)
	}
}
