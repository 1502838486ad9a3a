package pubsub

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/asya-sh/asya-sync/internal/brokertest"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// Ensure makes the topic and the subscription of one name, configured as
// upstream's composition-pubsub.yaml configures them, both recorded to
// the claim.
func TestEnsureCreatesTopicAndSubscription(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		change     func(*Settings)
		q          transport.Queue
		wantLabels map[string]string
		wantAck    int32
	}{
		{"flat actor, upstream's settings", func(*Settings) {},
			transport.Queue{Namespace: "team-a", Actor: "doubler", Scoped: true},
			map[string]string{LabelOwner: "doubler", LabelOwnerNamespace: "team-a"}, 300},
		{"nested claim with a dot", func(*Settings) {},
			transport.Queue{Namespace: "team-a", Actor: "v1.echo"},
			map[string]string{LabelOwner: "v1_echo"}, 300},
		{"configured ack deadline", func(s *Settings) { s.AckDeadlineSeconds = 120 },
			transport.Queue{Namespace: "team-a", Actor: "slow", Scoped: true},
			map[string]string{LabelOwner: "slow", LabelOwnerNamespace: "team-a"}, 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBroker(t, tt.change)
			q := tt.q
			q.Namespace = testenv.ActorName(q.Namespace)
			if tt.wantLabels[LabelOwnerNamespace] != "" {
				tt.wantLabels[LabelOwnerNamespace] = q.Namespace
			}
			cleanup(t, q)
			if err := b.Ensure(testenv.Context(t), q); err != nil {
				t.Fatal(err)
			}
			topic, err := getTopic(t, q.Name())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantLabels, topic.Labels); diff != "" {
				t.Errorf("topic labels (-want +got):\n%s", diff)
			}
			sub := mustSubscription(t, q.Name())
			if sub.Topic != topic.Name || sub.AckDeadlineSeconds != tt.wantAck ||
				sub.MessageRetentionDuration.AsDuration() != 7*24*time.Hour ||
				sub.ExpirationPolicy == nil || sub.ExpirationPolicy.Ttl != nil {
				t.Errorf("subscription: topic %s, ack deadline %d, retention %v, expiration %v; want %s, %d, 168h, never",
					sub.Topic, sub.AckDeadlineSeconds, sub.MessageRetentionDuration.AsDuration(), sub.ExpirationPolicy, topic.Name, tt.wantAck)
			}
			if diff := cmp.Diff(tt.wantLabels, sub.Labels); diff != "" {
				t.Errorf("subscription labels (-want +got):\n%s", diff)
			}
			if claimIn(sub.Labels) != q.Claim() {
				t.Errorf("the record reads %q, want the claim %q", claimIn(sub.Labels), q.Claim())
			}
		})
	}
}

// A message published to the topic waits in the subscription: what the
// sidecars rely on.
func TestEnsuredQueueCarriesMessages(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	q := transport.Queue{Namespace: testenv.ActorName("ns"), Actor: "echo", Scoped: true}
	cleanup(t, q)
	ctx := testenv.Context(t)
	if err := b.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := b.Ensure(ctx, q); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	publish(t, q, "hello")
	if got := pull(t, q, 10); !cmp.Equal(got, []string{"hello"}) {
		t.Errorf("pulled %q, want [hello]", got)
	}
}

// What differs from the configuration is set in place: the subscription
// keeps its messages, its other labels and its record.
func TestEnsureUpdatesSubscriptionInPlace(t *testing.T) {
	t.Parallel()
	q := transport.Queue{Namespace: testenv.ActorName("ns"), Actor: "echo", Scoped: true}
	cleanup(t, q)
	ctx := testenv.Context(t)
	if err := newBroker(t).Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	publish(t, q, "kept")
	// Someone set an expiry and a label of their own.
	_, subs, _ := admin(t).clients(ctx)
	sub := mustSubscription(t, q.Name())
	sub.ExpirationPolicy = &pb.ExpirationPolicy{Ttl: durationpb.New(31 * 24 * time.Hour)}
	sub.Labels["team"] = "ml"
	if _, err := subs.UpdateSubscription(ctx, &pb.UpdateSubscriptionRequest{Subscription: sub,
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"expiration_policy", "labels"}}}); err != nil {
		t.Fatal(err)
	}

	changed := newBroker(t, func(s *Settings) { s.AckDeadlineSeconds = 60; s.MessageRetentionSeconds = 3600 })
	if err := changed.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	sub = mustSubscription(t, q.Name())
	if sub.AckDeadlineSeconds != 60 || sub.MessageRetentionDuration.AsDuration() != time.Hour ||
		sub.ExpirationPolicy == nil || sub.ExpirationPolicy.Ttl != nil {
		t.Errorf("after Ensure: ack deadline %d, retention %v, expiration %v; want 60, 1h, never",
			sub.AckDeadlineSeconds, sub.MessageRetentionDuration.AsDuration(), sub.ExpirationPolicy)
	}
	if sub.Labels["team"] != "ml" || claimIn(sub.Labels) != q.Claim() {
		t.Errorf("labels %v, want team=ml kept and the record of %s", sub.Labels, q.Claim())
	}
	if got := pull(t, q, 10); !cmp.Equal(got, []string{"kept"}) {
		t.Errorf("pulled %q, want the message published before the update", got)
	}
}

// collision is two flat claims of one name: namespace <ns>-b's actor
// doubler and namespace <ns>'s actor b-doubler.
func collision(t *testing.T) (first, second transport.Queue) {
	t.Helper()
	ns := testenv.ActorName("ns")
	first = transport.Queue{Namespace: ns + "-b", Actor: "doubler", Scoped: true}
	second = transport.Queue{Namespace: ns, Actor: "b-doubler", Scoped: true}
	if first.Name() != second.Name() {
		t.Fatalf("%s and %s: not one queue", first.Name(), second.Name())
	}
	cleanup(t, first)
	return first, second
}

// The first claim owns the topic and the subscription: the second gets
// QueueConflict, changes nothing and deletes nothing.
func TestRecordsTheFirstClaim(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	ctx := testenv.Context(t)
	first, second := collision(t)
	if err := b.Ensure(ctx, first); err != nil {
		t.Fatal(err)
	}
	publish(t, first, "for the owner")

	other := newBroker(t, func(s *Settings) { s.AckDeadlineSeconds = 30 })
	wantHeld(t, other.Ensure(ctx, second), first.Name(), first.Claim())
	if sub := mustSubscription(t, first.Name()); sub.AckDeadlineSeconds != 300 || claimIn(sub.Labels) != first.Claim() {
		t.Errorf("after the other claim's Ensure: ack deadline %d, owner %q; want the owner's (300, %s)",
			sub.AckDeadlineSeconds, claimIn(sub.Labels), first.Claim())
	}
	wantHeld(t, other.Delete(ctx, second), first.Name(), first.Claim())
	if _, err := getTopic(t, first.Name()); err != nil {
		t.Errorf("topic after the other claim's Delete: %v, want it kept", err)
	}
	if got := pull(t, first, 10); !cmp.Equal(got, []string{"for the owner"}) {
		t.Errorf("pulled %q, want the owner's message kept", got)
	}
}

// Topics and subscriptions made before asya-sync (upstream's Crossplane
// composition, or by hand) carry no record: the first claim to ensure
// them adopts them, messages kept, and the next is turned away.
func TestAdoptsUnrecordedQueue(t *testing.T) {
	t.Parallel()
	first, second := collision(t)
	b, ctx, topics, subs := adminClients(t)
	if _, err := topics.CreateTopic(ctx, &pb.Topic{Name: b.cfg.TopicPath(first.Name()), Labels: map[string]string{"made-by": "crossplane"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := subs.CreateSubscription(ctx, &pb.Subscription{Name: b.cfg.SubscriptionPath(first.Name()), Topic: b.cfg.TopicPath(first.Name()), AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	publish(t, first, "before")

	if err := b.Ensure(ctx, first); err != nil {
		t.Fatal(err)
	}
	topic, err := getTopic(t, first.Name())
	if err != nil {
		t.Fatal(err)
	}
	if claimIn(topic.Labels) != first.Claim() || topic.Labels["made-by"] != "crossplane" {
		t.Errorf("topic labels %v, want the record of %s and made-by kept", topic.Labels, first.Claim())
	}
	if sub := mustSubscription(t, first.Name()); claimIn(sub.Labels) != first.Claim() || sub.AckDeadlineSeconds != 300 {
		t.Errorf("subscription: owner %q, ack deadline %d; want %s, 300", claimIn(sub.Labels), sub.AckDeadlineSeconds, first.Claim())
	}
	if got := pull(t, first, 10); !cmp.Equal(got, []string{"before"}) {
		t.Errorf("pulled %q, want the message published before the adoption", got)
	}
	wantHeld(t, b.Ensure(ctx, second), first.Name(), first.Claim())
}

// Delete removes the subscription and the topic of the claim's own, and a
// queue already gone is no error.
func TestDelete(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	ctx := testenv.Context(t)
	q := transport.Queue{Namespace: testenv.ActorName("ns"), Actor: "gone", Scoped: true}
	cleanup(t, q)
	if err := b.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	publish(t, q, "dropped with the queue")
	for i := range 2 {
		if err := b.Delete(ctx, q); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := getSubscription(t, q.Name()); status.Code(err) != codes.NotFound {
		t.Errorf("subscription after Delete: %v, want NotFound", err)
	}
	if _, err := getTopic(t, q.Name()); status.Code(err) != codes.NotFound {
		t.Errorf("topic after Delete: %v, want NotFound", err)
	}
}

// Delete leaves the queue named as q's dead-letter queue would be: a
// Pub/Sub transport has none, and asya-<ns>-<a>-dlq is actor <a>-dlq's,
// recorded or not.
func TestDeleteLeavesTheNameOfADLQ(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	ctx := testenv.Context(t)
	ns := testenv.ActorName("ns")
	q := transport.Queue{Namespace: ns, Actor: "a", Scoped: true}
	other := transport.Queue{Namespace: ns, Actor: "a-dlq", Scoped: true}
	cleanup(t, q)
	cleanup(t, other)
	// The other's topic and subscription made without a record, as
	// upstream's composition makes them.
	topics, subs, err := b.clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topics.CreateTopic(ctx, &pb.Topic{Name: b.cfg.TopicPath(other.Name())}); err != nil {
		t.Fatal(err)
	}
	if _, err := subs.CreateSubscription(ctx, &pb.Subscription{Name: b.cfg.SubscriptionPath(other.Name()), Topic: b.cfg.TopicPath(other.Name()), AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	if other.Name() != q.DLQName() {
		t.Fatalf("%s is not %s's DLQ name %s", other.Name(), q.Name(), q.DLQName())
	}
	if err := b.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := getSubscription(t, other.Name()); err != nil {
		t.Errorf("subscription %s after %s's Delete: %v, want it kept", other.Name(), q.Name(), err)
	}
}

// With autoCreate (or manage) off, Ensure creates nothing and says which
// subscription is missing, and why it was not made.
func TestAutoCreateOff(t *testing.T) {
	t.Parallel()
	off := false
	b := newBroker(t, func(s *Settings) { s.Queues.AutoCreate = &off })
	ctx := testenv.Context(t)
	q := transport.Queue{Namespace: testenv.ActorName("ns"), Actor: "provisioned", Scoped: true}
	cleanup(t, q)
	te := brokertest.WantReason(t, b.Ensure(ctx, q), transport.ReasonQueueNotFound)
	if !strings.Contains(te.Message, q.Name()) || !strings.Contains(te.Message, "queues.autoCreate is off") {
		t.Errorf("message %q: want the subscription and queues.autoCreate named", te.Message)
	}
	if _, err := getTopic(t, q.Name()); status.Code(err) != codes.NotFound {
		t.Errorf("topic: %v, want none made", err)
	}
	if err := newBroker(t).Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := b.Ensure(ctx, q); err != nil {
		t.Errorf("Ensure of an existing subscription with autoCreate off: %v", err)
	}
}

// No emulator at the endpoint: BrokerUnavailable, whose text is the same
// on every try (a status message that changed would never settle).
func TestUnreachableEndpoint(t *testing.T) {
	t.Parallel()
	b := New("down", Settings{ProjectID: "p", Endpoint: "127.0.0.1:1", AckDeadlineSeconds: 300, MessageRetentionSeconds: 600})
	defer b.Close()
	q := transport.Queue{Namespace: "ns", Actor: "down", Scoped: true}
	var texts []string
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		te := brokertest.WantReason(t, b.Ensure(ctx, q), transport.ReasonBrokerUnavailable)
		cancel()
		texts = append(texts, te.Message)
	}
	if texts[0] != texts[1] || !strings.Contains(texts[0], "127.0.0.1:1") {
		t.Errorf("messages %q: want one text naming the endpoint", texts)
	}
}

// Pub/Sub's API has no backlog count: Counts says nothing, without a call.
func TestCountsUnknown(t *testing.T) {
	b := New("none", Settings{ProjectID: "p"})
	counts, err := b.Counts(context.Background(), transport.Queue{Actor: "x"})
	if err != nil || counts.Queued != nil || counts.Processing != nil {
		t.Errorf("Counts = %s/%s, %v; want unknown, no error", brokertest.Count(counts.Queued), brokertest.Count(counts.Processing), err)
	}
}

// Two claims ensuring one new queue at once: one owns it, the other is
// turned away, whichever comes first.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	for range 5 {
		b := newBroker(t)
		ctx := testenv.Context(t)
		first, second := collision(t)
		errs := make(chan error, 2)
		for _, q := range []transport.Queue{first, second} {
			go func() { errs <- b.Ensure(ctx, q) }()
		}
		var held int
		for range 2 {
			err := <-errs
			if _, ok := transport.HeldBy(err); ok {
				held++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		sub := mustSubscription(t, first.Name())
		topic, err := getTopic(t, first.Name())
		if err != nil {
			t.Fatal(err)
		}
		if held != 1 || claimIn(sub.Labels) != claimIn(topic.Labels) || claimIn(sub.Labels) == "" {
			t.Errorf("%d turned away, topic's record %q, subscription's %q: want one owner of both", held, claimIn(topic.Labels), claimIn(sub.Labels))
		}
	}
}
