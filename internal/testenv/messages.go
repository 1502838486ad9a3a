//go:build e2e

package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	amqp "github.com/rabbitmq/amqp091-go"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// WithAMQP runs do on a channel of the broker at amqpURL, failing the test on an error.
func WithAMQP(t *testing.T, amqpURL string, do func(ch *amqp.Channel) error) {
	t.Helper()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := do(ch); err != nil {
		t.Fatal(err)
	}
}

// Envelope is the Asya message: what a gateway or a sidecar puts on an
// actor's queue, and what comes out on happy-end and error-end.
type Envelope struct {
	ID      string `json:"id"`
	Route   Route  `json:"route"`
	Payload any    `json:"payload"`
	Error   any    `json:"error,omitempty"`
	// Raw is the message as it arrived, for what the fields above leave
	// out (a flat envelope's route and status).
	Raw json.RawMessage `json:"-"`
}

// Route is an envelope's route: the actors and the current one.
type Route struct {
	Actors  []string `json:"actors"`
	Current int      `json:"current"`
}

// NodeBroker is a transport as the node tier's tests use it: put an
// envelope on an actor's queue, and take the envelopes an end actor's queue
// received.
type NodeBroker struct {
	Transport string
	// Name is the actor's name for this run (SQS refuses a queue name
	// deleted within the last 60 s).
	Name func(string) string
	// EndQueue makes an end actor's queue, empty, where the sidecars route.
	EndQueue func(t *testing.T, ctx context.Context, actor string)
	Send     func(t *testing.T, ctx context.Context, actor string, m Envelope)
	// Take returns the envelopes on the actor's queue, taking them off.
	Take func(t *testing.T, ctx context.Context, actor string) []Envelope
}

// WithChannel is WithAMQP on the test broker.
func WithChannel(t *testing.T, do func(ch *amqp.Channel) error) {
	t.Helper()
	WithAMQP(t, RabbitURL(), do)
}

// DecodeEnvelope decodes a message body, failing the test when it is not an envelope.
func DecodeEnvelope(t *testing.T, body []byte) Envelope {
	t.Helper()
	var m Envelope
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not an envelope: %v: %s", err, body)
	}
	m.Raw = body
	return m
}

// PubSubAdmin is a client of the emulator's topics and subscriptions,
// closed after the test.
func PubSubAdmin(t *testing.T, ctx context.Context) (*vkit.TopicAdminClient, *vkit.SubscriptionAdminClient) {
	t.Helper()
	opts := []option.ClientOption{option.WithEndpoint(PubSubEndpoint()), option.WithoutAuthentication(),
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

// PubSubPath is the emulator's path of queue's topic or subscription (kind).
func PubSubPath(kind, queue string) string {
	return "projects/" + PubSubProject + "/" + kind + "/" + queue
}

// PubSubPublish puts body on the topic asya-<actor>, as a sidecar does.
func PubSubPublish(t *testing.T, ctx context.Context, actor string, body []byte) {
	t.Helper()
	topics, _ := PubSubAdmin(t, ctx)
	if _, err := topics.Publish(ctx, &pb.PublishRequest{Topic: PubSubPath("topics", "asya-"+actor),
		Messages: []*pb.PubsubMessage{{Data: body}}}); err != nil {
		t.Fatalf("publish to asya-%s: %v", actor, err)
	}
}

// PubSubNodeBroker is the node tier's Pub/Sub, for flat actors only (the
// 0.3 sidecar has none): a topic and a subscription per queue on the
// emulator, which the tier relays to the pods.
var PubSubNodeBroker = NodeBroker{
	Transport: "pubsub",
	Name:      func(n string) string { return n },
	EndQueue: func(t *testing.T, ctx context.Context, actor string) {
		if !env.PubSub {
			Missing(t, "the Pub/Sub emulator at "+PubSubEndpoint(), fmt.Errorf("not listening"))
		}
		topics, subs := PubSubAdmin(t, ctx)
		topic, sub := PubSubPath("topics", "asya-"+actor), PubSubPath("subscriptions", "asya-"+actor)
		if _, err := topics.CreateTopic(ctx, &pb.Topic{Name: topic}); err != nil && status.Code(err) != codes.AlreadyExists {
			t.Fatalf("topic asya-%s: %v", actor, err)
		}
		if _, err := subs.CreateSubscription(ctx, &pb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 60}); err != nil && status.Code(err) != codes.AlreadyExists {
			t.Fatalf("subscription asya-%s: %v", actor, err)
		}
		pubsubTake(t, ctx, actor)
	},
	Send: func(t *testing.T, ctx context.Context, actor string, m Envelope) {
		body, _ := json.Marshal(m)
		PubSubPublish(t, ctx, actor, body)
	},
	Take: pubsubTake,
}

// pubsubTake pulls and acknowledges what the subscription asya-<actor>
// holds.
func pubsubTake(t *testing.T, ctx context.Context, actor string) []Envelope {
	t.Helper()
	_, subs := PubSubAdmin(t, ctx)
	sub := PubSubPath("subscriptions", "asya-"+actor)
	var out []Envelope
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
			out = append(out, DecodeEnvelope(t, m.Message.Data))
			ids = append(ids, m.AckId)
		}
		if err := subs.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: sub, AckIds: ids}); err != nil {
			t.Fatalf("acknowledge on asya-%s: %v", actor, err)
		}
	}
}
