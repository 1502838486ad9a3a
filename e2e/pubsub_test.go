//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// needPubSub skips the test without the Pub/Sub emulator, or fails it
// under ASYA_REQUIRE_INTEGRATION=1 (setup refuses to start then).
func needPubSub(t *testing.T) {
	t.Helper()
	if !env.pubsub {
		t.Skipf("the Pub/Sub emulator is not listening at %s: run .ci/services.sh", testenv.PubSubEndpoint())
	}
}

// pubsubLabels reads the labels of the topic and the subscription of one
// name on the emulator; a missing one is nil.
func pubsubLabels(t *testing.T, ctx context.Context, name string) (topic, sub map[string]string) {
	t.Helper()
	topics, subs := pubsubAdmin(t, ctx)
	tp, err := topics.GetTopic(ctx, &pb.GetTopicRequest{Topic: pubsubPath("topics", name)})
	switch {
	case err == nil:
		topic = tp.Labels
		if topic == nil {
			topic = map[string]string{}
		}
	case status.Code(err) != codes.NotFound:
		t.Fatalf("topic %s: %v", name, err)
	}
	sp, err := subs.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: pubsubPath("subscriptions", name)})
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
	needKEDA(t)
	needPubSub(t)
	ctx := ctxFor(t, 3*time.Minute)
	ns := "e2e-pubsub"
	ensureNamespace(t, ctx, ns, false)
	secret := obj{"apiVersion": "v1", "kind": "Secret", "metadata": obj{"name": "gcp-pubsub", "namespace": ns},
		"stringData": obj{"credentials.json": "not a service account key"}}
	if _, err := env.cluster.client.apply(ctx, secret, "e2e"); err != nil {
		t.Fatal(err)
	}
	name := "doubler-" + env.runID
	queue := "asya-" + ns + "-" + name
	a := obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": obj{"name": name, "namespace": ns},
		"spec": obj{"actor": name, "transport": "pubsub", "image": "python:3.12-slim", "handler": "doubler.handle",
			"scaling": obj{"pollingInterval": 5, "maxReplicaCount": 3}}}

	before := webhookCalls(t)
	createActor(t, ctx, a)
	topic, sub := pubsubLabels(t, ctx, queue)
	if topic == nil || sub == nil {
		t.Fatalf("topic %v, subscription %v of %s: want both made; status %s", topic, sub, queue, mustJSON(getActor(t, ctx, ns, name)["status"]))
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
		t.Fatalf("children %v: want the ScaledObject and the TriggerAuthentication", keys(children))
	}
	trigger := field(so, "spec", "triggers").([]any)[0].(obj)
	if str(trigger, "type") != "gcp-pubsub" || str(trigger, "metadata", "subscriptionName") != "projects/"+testenv.PubSubProject+"/subscriptions/"+queue {
		t.Errorf("trigger %s: want gcp-pubsub on the actor's subscription", mustJSON(trigger))
	}
	if got := mustJSON(field(ta, "spec", "secretTargetRef")); !strings.Contains(got, `"parameter":"GoogleApplicationCredentials"`) {
		t.Errorf("TriggerAuthentication secretTargetRef %s: want GoogleApplicationCredentials from the Secret", got)
	}

	// An update of both: a new bound changes the ScaledObject, and the
	// pass re-applies the TriggerAuthentication.
	mapAt(a, "spec", "scaling")["maxReplicaCount"] = 4
	if _, err := env.cluster.client.apply(ctx, a, "e2e"); err != nil {
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
	t.Logf("KEDA on the Pub/Sub actor: Ready=%s %q; the actor: %s", kedaSays, msg, mustJSON(conditions(getActor(t, ctx, ns, name))["ScalingReady"]))

	deleteAndFinalize(t, ctx, ns, name)
	if topic, sub := pubsubLabels(t, ctx, queue); topic != nil || sub != nil {
		t.Errorf("after finalize: topic %v, subscription %v; want both deleted", topic, sub)
	}
}

// pubsubAdmin is a client of the emulator's topics and subscriptions,
// closed after the test.
func pubsubAdmin(t *testing.T, ctx context.Context) (*vkit.TopicAdminClient, *vkit.SubscriptionAdminClient) {
	t.Helper()
	opts := []option.ClientOption{option.WithEndpoint(testenv.PubSubEndpoint()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	topics, err := vkit.NewTopicAdminClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := vkit.NewSubscriptionAdminClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topics.Close(); subs.Close() })
	return topics, subs
}

func pubsubPath(kind, queue string) string {
	return "projects/" + testenv.PubSubProject + "/" + kind + "/" + queue
}

// pubsubPublish puts body on the topic asya-<actor>, as a sidecar does.
func pubsubPublish(t *testing.T, ctx context.Context, actor string, body []byte) {
	t.Helper()
	topics, _ := pubsubAdmin(t, ctx)
	if _, err := topics.Publish(ctx, &pb.PublishRequest{Topic: pubsubPath("topics", "asya-"+actor),
		Messages: []*pb.PubsubMessage{{Data: body}}}); err != nil {
		t.Fatalf("publish to asya-%s: %v", actor, err)
	}
}

// pubsubNodeBroker is the node tier's Pub/Sub, for flat actors only (the
// 0.3 sidecar has none): a topic and a subscription per queue on the
// emulator, which the tier relays to the pods.
var pubsubNodeBroker = nodeBroker{
	transport: "pubsub",
	name:      func(n string) string { return n },
	endQueue: func(t *testing.T, ctx context.Context, actor string) {
		if !env.pubsub {
			testenv.Missing(t, "the Pub/Sub emulator at "+testenv.PubSubEndpoint(), fmt.Errorf("not listening"))
		}
		topics, subs := pubsubAdmin(t, ctx)
		topic, sub := pubsubPath("topics", "asya-"+actor), pubsubPath("subscriptions", "asya-"+actor)
		if _, err := topics.CreateTopic(ctx, &pb.Topic{Name: topic}); err != nil && status.Code(err) != codes.AlreadyExists {
			t.Fatalf("topic asya-%s: %v", actor, err)
		}
		if _, err := subs.CreateSubscription(ctx, &pb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 60}); err != nil && status.Code(err) != codes.AlreadyExists {
			t.Fatalf("subscription asya-%s: %v", actor, err)
		}
		pubsubTake(t, ctx, actor)
	},
	send: func(t *testing.T, ctx context.Context, actor string, m envelope) {
		body, _ := json.Marshal(m)
		pubsubPublish(t, ctx, actor, body)
	},
	take: pubsubTake,
}

// pubsubTake pulls and acknowledges what the subscription asya-<actor>
// holds.
func pubsubTake(t *testing.T, ctx context.Context, actor string) []envelope {
	t.Helper()
	_, subs := pubsubAdmin(t, ctx)
	sub := pubsubPath("subscriptions", "asya-"+actor)
	var out []envelope
	for {
		resp, err := subs.Pull(ctx, &pb.PullRequest{Subscription: sub, MaxMessages: 10, ReturnImmediately: true}) //nolint:staticcheck // the emulator honours it
		if err != nil {
			t.Fatalf("pull from asya-%s: %v", actor, err)
		}
		if len(resp.ReceivedMessages) == 0 {
			return out
		}
		var ids []string
		for _, m := range resp.ReceivedMessages {
			out = append(out, decodeEnvelope(t, m.Message.Data))
			ids = append(ids, m.AckId)
		}
		if err := subs.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: sub, AckIds: ids}); err != nil {
			t.Fatalf("acknowledge on asya-%s: %v", actor, err)
		}
	}
}
