package pubsub

import (
	"context"
	"testing"
	"time"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

func testSettings(change ...func(*Settings)) Settings {
	s := Settings{ProjectID: testenv.PubSubProject, Endpoint: testenv.PubSubEndpoint()}
	for _, c := range change {
		c(&s)
	}
	if err := s.Check(); err != nil {
		panic(err)
	}
	return s
}

// newBroker is a broker on the emulator, closed after the test.
func newBroker(t *testing.T, change ...func(*Settings)) *Broker {
	t.Helper()
	testenv.NeedPubSub(t)
	b := New("pubsub-test", testSettings(change...))
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// admin is a broker to look at the emulator with, whatever the settings
// of the one under test.
func admin(t *testing.T) *Broker { return newBroker(t) }

// adminClients are an admin broker and its clients, with the test's
// context.
func adminClients(t *testing.T) (*Broker, context.Context, *vkit.TopicAdminClient, *vkit.SubscriptionAdminClient) {
	t.Helper()
	b := admin(t)
	ctx := testenv.Context(t)
	topics, subs, err := b.clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b, ctx, topics, subs
}

// cleanup deletes q's topic and subscription at the end of the test,
// whoever holds them.
func cleanup(t *testing.T, q transport.Queue) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b := New("cleanup", testSettings())
		defer b.Close()
		topics, subs, err := b.clients(ctx)
		if err != nil {
			return
		}
		_ = subs.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: b.cfg.SubscriptionPath(q.Name())})
		_ = topics.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: b.cfg.TopicPath(q.Name())})
	})
}

func getTopic(t *testing.T, name string) (*pb.Topic, error) {
	t.Helper()
	b, ctx, topics, _ := adminClients(t)
	return topics.GetTopic(ctx, &pb.GetTopicRequest{Topic: b.cfg.TopicPath(name)})
}

func getSubscription(t *testing.T, name string) (*pb.Subscription, error) {
	t.Helper()
	b, ctx, _, subs := adminClients(t)
	return subs.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: b.cfg.SubscriptionPath(name)})
}

func mustSubscription(t *testing.T, name string) *pb.Subscription {
	t.Helper()
	sub, err := getSubscription(t, name)
	if err != nil {
		t.Fatalf("subscription %s: %v", name, err)
	}
	return sub
}

// publish puts a message on the queue's topic, as a sidecar does.
func publish(t *testing.T, q transport.Queue, data string) {
	t.Helper()
	b, ctx, topics, _ := adminClients(t)
	if _, err := topics.Publish(ctx, &pb.PublishRequest{Topic: b.cfg.TopicPath(q.Name()), Messages: []*pb.PubsubMessage{{Data: []byte(data)}}}); err != nil {
		t.Fatal(err)
	}
}

// pull takes up to max messages off the queue's subscription, without
// acknowledging them.
func pull(t *testing.T, q transport.Queue, max int32) []string {
	t.Helper()
	b, ctx, _, subs := adminClients(t)
	resp, err := subs.Pull(ctx, &pb.PullRequest{Subscription: b.cfg.SubscriptionPath(q.Name()), MaxMessages: max, ReturnImmediately: true}) //nolint:staticcheck // the emulator answers at once either way
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range resp.ReceivedMessages {
		out = append(out, string(m.Message.Data))
	}
	return out
}

func wantHeld(t *testing.T, err error, queue, holder string) {
	t.Helper()
	held, ok := transport.HeldBy(err)
	if !ok || held.Queue != queue || held.Holder != holder || transport.AsError(err).Reason != transport.ReasonQueueConflict {
		t.Fatalf("error = %v, want QueueConflict: %s held by %s", err, queue, holder)
	}
}
