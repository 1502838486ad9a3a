package pubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/asya-sh/asya-sync/transport"
)

// Broker manages the actors' topics and subscriptions on one Pub/Sub
// transport. Each queue is a topic and a subscription of one name,
// asya-<namespace>-<actor>: the sidecar publishes to the topic and pulls
// from the subscription. Credentials come from Google's default chain
// (GOOGLE_APPLICATION_CREDENTIALS, Workload Identity), or none with an
// emulator's endpoint.
type Broker struct {
	name string
	cfg  Settings

	mu     sync.Mutex
	topics *vkit.TopicAdminClient
	subs   *vkit.SubscriptionAdminClient
	// extra are more client options, for tests (an interceptor that
	// counts the calls).
	extra []option.ClientOption
}

// New builds the broker of the transport called name; it connects on
// first use.
func New(name string, cfg Settings) *Broker { return &Broker{name: name, cfg: cfg} }

// clients opens the admin clients once; a failure is tried again on the
// next call.
func (b *Broker) clients(ctx context.Context) (*vkit.TopicAdminClient, *vkit.SubscriptionAdminClient, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.topics != nil {
		return b.topics, b.subs, nil
	}
	var opts []option.ClientOption
	if b.cfg.Endpoint != "" {
		opts = append(opts,
			option.WithEndpoint(b.cfg.Endpoint),
			option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	opts = append(opts, b.extra...)
	topics, err := vkit.NewTopicAdminClient(ctx, opts...)
	if err != nil {
		return nil, nil, &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: "opening the Pub/Sub client for " + b.where(), Err: err}
	}
	subs, err := vkit.NewSubscriptionAdminClient(ctx, opts...)
	if err != nil {
		_ = topics.Close()
		return nil, nil, &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: "opening the Pub/Sub client for " + b.where(), Err: err}
	}
	b.topics, b.subs = topics, subs
	return topics, subs, nil
}

// Ensure creates the topic and then its subscription, each recorded to
// q's claim, or adopts and updates in place the ones that exist and are
// the claim's. With autoCreate or manage off it only checks that the
// subscription exists.
func (b *Broker) Ensure(ctx context.Context, q transport.Queue) error {
	topics, subs, err := b.clients(ctx)
	if err != nil {
		return err
	}
	name := q.Name()
	if !b.cfg.Queues.AutoCreateQueues() {
		_, err := subs.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: b.cfg.SubscriptionPath(name)})
		if err != nil {
			err = b.explain(err, "looking up subscription "+name)
			var te *transport.Error
			if errors.As(err, &te) && te.Reason == transport.ReasonQueueNotFound {
				te.Message = fmt.Sprintf("subscription %s does not exist on %s and %s: create it and its topic", name, b.where(), b.cfg.Queues.NotCreatedBecause())
			}
		}
		return err
	}
	record, err := recordOf(q.Claim())
	if err != nil {
		return &transport.Error{Reason: transport.ReasonQueueError, Message: "recording the owner of " + name, Err: err}
	}
	if err := b.ensureTopic(ctx, topics, name, record); err != nil {
		return err
	}
	return b.ensureSubscription(ctx, subs, name, record)
}

// ensureTopic creates the topic with its record, or makes sure the one
// that exists is the claim's: one without a record is recorded to it now.
// It reads first, since a topic that exists is the common case (an ensure
// is cached only for queueCacheTTL). The record is given at CreateTopic,
// which fails for the second of two claims creating one topic at once.
// Pub/Sub cannot label on a condition, so of two claims adopting one topic
// at once, the one whose record was overwritten sees the other's on the
// read back, or at its next ensure.
func (b *Broker) ensureTopic(ctx context.Context, topics *vkit.TopicAdminClient, name string, record map[string]string) error {
	path := b.cfg.TopicPath(name)
	topic, err := topics.GetTopic(ctx, &pb.GetTopicRequest{Topic: path})
	if status.Code(err) == codes.NotFound {
		if _, err = topics.CreateTopic(ctx, &pb.Topic{Name: path, Labels: record}); err == nil {
			return nil
		}
		if status.Code(err) != codes.AlreadyExists {
			return b.explain(err, "creating topic "+name)
		}
		topic, err = topics.GetTopic(ctx, &pb.GetTopicRequest{Topic: path})
	}
	if err != nil {
		return b.explain(err, "reading topic "+name)
	}
	switch holder := claimIn(topic.Labels); {
	case holder == claimIn(record):
		return nil
	case holder != "":
		return transport.HeldError(name, holder)
	}
	topic.Labels = withRecord(topic.Labels, record)
	if _, err := topics.UpdateTopic(ctx, &pb.UpdateTopicRequest{Topic: topic, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}}}); err != nil {
		return b.explain(err, "recording the owner of topic "+name)
	}
	topic, err = topics.GetTopic(ctx, &pb.GetTopicRequest{Topic: path})
	if err != nil {
		return b.explain(err, "reading topic "+name)
	}
	if holder := claimIn(topic.Labels); holder != "" && holder != claimIn(record) {
		return transport.HeldError(name, holder)
	}
	return nil
}

// subscription is the subscription asya-sync wants for the queue name.
func (b *Broker) subscription(name string, labels map[string]string) *pb.Subscription {
	return &pb.Subscription{
		Name:                     b.cfg.SubscriptionPath(name),
		Topic:                    b.cfg.TopicPath(name),
		AckDeadlineSeconds:       b.cfg.AckDeadlineSeconds,
		MessageRetentionDuration: durationpb.New(time.Duration(b.cfg.MessageRetentionSeconds) * time.Second),
		// An empty policy: the subscription never expires, however long
		// its actor is idle (Pub/Sub's default deletes it after 31 days).
		ExpirationPolicy: &pb.ExpirationPolicy{},
		Labels:           labels,
	}
}

// ensureSubscription creates the subscription with its record, or adopts
// the one that exists (reading first, as ensureTopic does) and sets in
// place what differs: the ack deadline, the retention and the expiration
// policy.
func (b *Broker) ensureSubscription(ctx context.Context, subs *vkit.SubscriptionAdminClient, name string, record map[string]string) error {
	want := b.subscription(name, record)
	got, err := subs.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: want.Name})
	if status.Code(err) == codes.NotFound {
		if _, err = subs.CreateSubscription(ctx, want); err == nil {
			return nil
		}
		if status.Code(err) != codes.AlreadyExists {
			return b.explain(err, "creating subscription "+name)
		}
		got, err = subs.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: want.Name})
	}
	if err != nil {
		return b.explain(err, "reading subscription "+name)
	}
	switch holder := claimIn(got.Labels); {
	case holder != "" && holder != claimIn(record):
		return transport.HeldError(name, holder)
	case holder == "":
		got.Labels = withRecord(got.Labels, record)
		if _, err := subs.UpdateSubscription(ctx, &pb.UpdateSubscriptionRequest{Subscription: got, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels"}}}); err != nil {
			return b.explain(err, "recording the owner of subscription "+name)
		}
		if got, err = subs.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: want.Name}); err != nil {
			return b.explain(err, "reading subscription "+name)
		}
		if holder := claimIn(got.Labels); holder != "" && holder != claimIn(record) {
			return transport.HeldError(name, holder)
		}
	}
	if got.Topic != want.Topic {
		// A subscription's topic cannot change, and nothing here deletes
		// a queue to change it: a topic deleted and made again leaves its
		// old subscriptions on "_deleted-topic_".
		return &transport.Error{Reason: transport.ReasonQueueError,
			Message: fmt.Sprintf("subscription %s on %s is attached to %s, not to topic %s: delete the subscription, and asya-sync makes it again", name, b.where(), got.Topic, name)}
	}
	paths := differing(got, want)
	if len(paths) == 0 {
		return nil
	}
	update := b.subscription(name, withRecord(got.Labels, record))
	if _, err := subs.UpdateSubscription(ctx, &pb.UpdateSubscriptionRequest{Subscription: update, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}}); err != nil {
		return b.explain(err, "updating subscription "+name)
	}
	return nil
}

// differing are the update mask's paths of what got has otherwise than
// want.
func differing(got, want *pb.Subscription) []string {
	var paths []string
	if got.AckDeadlineSeconds != want.AckDeadlineSeconds {
		paths = append(paths, "ack_deadline_seconds")
	}
	if got.GetMessageRetentionDuration().AsDuration() != want.MessageRetentionDuration.AsDuration() {
		paths = append(paths, "message_retention_duration")
	}
	if got.ExpirationPolicy == nil || got.ExpirationPolicy.Ttl != nil {
		paths = append(paths, "expiration_policy")
	}
	return paths
}

// Delete deletes the subscription (messages and all) and the topic,
// unless either is recorded to another claim: then both are left as they
// are, and the error is a *transport.Held. Ones without a record are
// deleted; a transport that does not create its queues records none, and
// deletes (asked to by the actor's deletion policy) without reading one.
// A Pub/Sub transport has no dead-letter queues, so q.DLQName() is not
// touched: it may be another actor's queue (of an actor named <a>-dlq).
func (b *Broker) Delete(ctx context.Context, q transport.Queue) error {
	topics, subs, err := b.clients(ctx)
	if err != nil {
		return err
	}
	return b.deleteQueue(ctx, topics, subs, q.Name(), q.Claim())
}

func (b *Broker) deleteQueue(ctx context.Context, topics *vkit.TopicAdminClient, subs *vkit.SubscriptionAdminClient, name, claim string) error {
	subPath, topicPath := b.cfg.SubscriptionPath(name), b.cfg.TopicPath(name)
	if b.cfg.Queues.AutoCreateQueues() {
		var holders []string
		sub, err := subs.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: subPath})
		switch {
		case err == nil:
			holders = append(holders, claimIn(sub.Labels))
		case status.Code(err) != codes.NotFound:
			return b.explain(err, "reading subscription "+name)
		}
		topic, err := topics.GetTopic(ctx, &pb.GetTopicRequest{Topic: topicPath})
		switch {
		case err == nil:
			holders = append(holders, claimIn(topic.Labels))
		case status.Code(err) != codes.NotFound:
			return b.explain(err, "reading topic "+name)
		}
		for _, holder := range holders {
			if holder != "" && holder != claim {
				return transport.HeldError(name, holder)
			}
		}
	}
	if err := subs.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: subPath}); err != nil && status.Code(err) != codes.NotFound {
		return b.explain(err, "deleting subscription "+name)
	}
	if err := topics.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: topicPath}); err != nil && status.Code(err) != codes.NotFound {
		return b.explain(err, "deleting topic "+name)
	}
	return nil
}

// Counts reports no counts: Pub/Sub's API says nothing of a
// subscription's backlog. Cloud Monitoring has it (KEDA's scaler reads
// it there), sampled a minute or more late, for another API and another
// permission; the status leaves the counts out (docs/design.md#queues).
func (b *Broker) Counts(context.Context, transport.Queue) (transport.Counts, error) {
	return transport.Counts{}, nil
}

// Close closes the clients, if they were opened.
func (b *Broker) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.topics == nil {
		return nil
	}
	err := errors.Join(b.topics.Close(), b.subs.Close())
	b.topics, b.subs = nil, nil
	return err
}

func (b *Broker) where() string {
	if b.cfg.Endpoint != "" {
		return "Pub/Sub at " + b.cfg.Endpoint + " (project " + b.cfg.ProjectID + ")"
	}
	return "Pub/Sub project " + b.cfg.ProjectID
}

// explain turns a gRPC error into a transport Error whose text is the same
// every time Pub/Sub answers the same way: the code and the message, not
// the client's wrapping.
func (b *Broker) explain(err error, doing string) error {
	st, ok := status.FromError(err)
	if !ok {
		// No answer at all: the deadline, or the client could not start.
		return &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: doing + " on " + b.where(), Err: err}
	}
	plain := fmt.Errorf("%s: %s", st.Code(), st.Message())
	reason := transport.ReasonQueueError
	switch st.Code() {
	case codes.NotFound:
		reason = transport.ReasonQueueNotFound
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unauthenticated:
		reason = transport.ReasonBrokerUnavailable
	}
	return &transport.Error{Reason: reason, Message: doing + " on " + b.where(), Err: plain}
}
