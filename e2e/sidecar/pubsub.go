package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// pubsubQueues pulls the actor's subscription one message at a time with
// the synchronous Pull and publishes to the next actor's topic, as the
// current sidecar's Pub/Sub transport at a7cec2a does
// (internal/transport/pubsub.go): topic and subscription both named
// asya-{namespace}-{actor}, in ASYA_PUBSUB_PROJECT_ID. With
// ASYA_PUBSUB_ENDPOINT (an emulator) it connects there without TLS or
// credentials; otherwise Google's default chain applies
// (GOOGLE_APPLICATION_CREDENTIALS, Workload Identity).
type pubsubQueues struct {
	cfg    config
	topics *vkit.TopicAdminClient
	subs   *vkit.SubscriptionAdminClient
}

// pubsubHandle is what ack and requeue need of a pulled message.
type pubsubHandle struct{ subscription, ackID string }

func newPubSub(ctx context.Context, cfg config) (*pubsubQueues, error) {
	var opts []option.ClientOption
	if cfg.PubSub.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.PubSub.Endpoint), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	topics, err := vkit.NewTopicAdminClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("failed to create Pub/Sub publisher client: %w", err)
	}
	subs, err := vkit.NewSubscriptionAdminClient(ctx, opts...)
	if err != nil {
		_ = topics.Close()
		return nil, fmt.Errorf("failed to create Pub/Sub subscriber client: %w", err)
	}
	return &pubsubQueues{cfg: cfg, topics: topics, subs: subs}, nil
}

func (p *pubsubQueues) topic(actor string) string {
	return "projects/" + p.cfg.PubSub.ProjectID + "/topics/" + p.cfg.queue(actor)
}

func (p *pubsubQueues) subscription(actor string) string {
	return "projects/" + p.cfg.PubSub.ProjectID + "/subscriptions/" + p.cfg.queue(actor)
}

// receive pulls one message, pulling again while none comes (the real
// transport's loop).
func (p *pubsubQueues) receive(ctx context.Context) (*message, error) {
	sub := p.subscription(p.cfg.Actor)
	for ctx.Err() == nil {
		resp, err := p.subs.Pull(ctx, &pb.PullRequest{Subscription: sub, MaxMessages: 1})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, fmt.Errorf("pull from subscription %s failed: %w", p.cfg.queue(p.cfg.Actor), err)
		}
		if len(resp.ReceivedMessages) > 0 {
			m := resp.ReceivedMessages[0]
			return &message{Body: m.Message.Data, handle: pubsubHandle{sub, m.AckId}}, nil
		}
	}
	return nil, ctx.Err()
}

// send publishes to the actor's topic and returns once Pub/Sub has it.
func (p *pubsubQueues) send(ctx context.Context, actor string, body []byte) error {
	_, err := p.topics.Publish(ctx, &pb.PublishRequest{Topic: p.topic(actor), Messages: []*pb.PubsubMessage{{Data: body}}})
	if err != nil {
		return fmt.Errorf("failed to publish to Pub/Sub topic %s: %w", p.cfg.queue(actor), err)
	}
	return nil
}

// sendDelayed: Pub/Sub holds no message back, as in the real transport.
func (p *pubsubQueues) sendDelayed(context.Context, string, []byte, time.Duration) error {
	return errDelayNotSupported
}

// ack acknowledges on a context of its own, as the real transport does,
// so that it reaches Pub/Sub after a SIGTERM too.
func (p *pubsubQueues) ack(_ context.Context, m *message) error {
	h := m.handle.(pubsubHandle)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.subs.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: h.subscription, AckIds: []string{h.ackID}})
}

// requeue is the real transport's Nack: the ack deadline set to 0, on a
// context of its own.
func (p *pubsubQueues) requeue(_ context.Context, m *message) error {
	h := m.handle.(pubsubHandle)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.subs.ModifyAckDeadline(ctx, &pb.ModifyAckDeadlineRequest{Subscription: h.subscription, AckIds: []string{h.ackID}})
}

// stopReceiving has nothing to do: Pub/Sub hands out messages only on
// Pull.
func (p *pubsubQueues) stopReceiving() error { return nil }

func (p *pubsubQueues) close() error {
	return errors.Join(p.subs.Close(), p.topics.Close())
}
