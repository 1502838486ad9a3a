package sqs

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// sqsCollision is two flat claims of one queue name: namespace <ns>-b's
// actor doubler and namespace <ns>'s actor b-doubler.
func sqsCollision(t *testing.T, s *Broker) (first, second transport.Queue) {
	t.Helper()
	ns := testenv.ActorName("ns")
	first = transport.Queue{Namespace: ns + "-b", Actor: "doubler", Scoped: true, ProcessingTimeout: 30}
	second = transport.Queue{Namespace: ns, Actor: "b-doubler", Scoped: true, ProcessingTimeout: 60}
	if first.Name() != second.Name() {
		t.Fatalf("%s and %s: not one queue", first.Name(), second.Name())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Delete(ctx, first)
	})
	return first, second
}

func wantHeld(t *testing.T, err error, queue, holder string) {
	t.Helper()
	held, ok := transport.HeldBy(err)
	if !ok || held.Queue != queue || held.Holder != holder || transport.AsError(err).Reason != transport.ReasonQueueConflict {
		t.Fatalf("error = %v, want QueueConflict: %s held by %s", err, queue, holder)
	}
}

// The first claim to create a queue owns it: the second changes none of
// its attributes or tags and cannot delete it, its DLQ included.
func TestSQSRecordsTheFirstClaim(t *testing.T) {
	t.Parallel()
	s := newSQS(t, withSQSDLQ)
	ctx := testenv.Context(t)
	first, second := sqsCollision(t, s)

	if err := s.Ensure(ctx, first); err != nil {
		t.Fatal(err)
	}
	sendSQS(t, s, first.Name(), "for the owner")
	wantHeld(t, s.Ensure(ctx, second), first.Name(), first.Claim())
	attrs, tags := sqsAttributes(t, s, first.Name()), sqsTags(t, s, first.Name())
	if attrs[attrVisibilityTimeout] != "60" || tags[TagNamespace] != first.Namespace || tags[TagOwner] != first.Claim() {
		t.Errorf("after the other claim's Ensure: visibility %s, tags %v; want the owner's (60, %s)",
			attrs[attrVisibilityTimeout], tags, first.Namespace)
	}

	wantHeld(t, s.Delete(ctx, second), first.Name(), first.Claim())
	for _, name := range []string{first.Name(), first.DLQName()} {
		if _, err := newSQS(t).queueURL(ctx, name); err != nil {
			t.Fatalf("%s after the other claim's Delete: %v, want it kept", name, err)
		}
	}
	if n := sqsAttributes(t, s, first.Name())[attrReady]; n != "1" {
		t.Errorf("%s holds %s messages, want the owner's 1", first.Name(), n)
	}
}

// A queue created before owner records existed (as the Asya operator did,
// or an earlier release, which tagged no owner) is adopted by the first
// claim that ensures it, messages kept; the next claim is turned away.
func TestSQSAdoptsAnUnrecordedQueue(t *testing.T) {
	t.Parallel()
	s := newSQS(t)
	ctx := testenv.Context(t)
	first, second := sqsCollision(t, s)
	if _, err := s.client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(first.Name()),
		Tags: map[string]string{TagActor: second.Actor, TagNamespace: second.Namespace}}); err != nil {
		t.Fatal(err)
	}
	sendSQS(t, s, first.Name(), "from before")

	if err := s.Ensure(ctx, first); err != nil {
		t.Fatalf("adopting: %v", err)
	}
	wantHeld(t, s.Ensure(ctx, second), first.Name(), first.Claim())
	if n := sqsAttributes(t, s, first.Name())[attrReady]; n != "1" {
		t.Errorf("%s holds %s messages, want the 1 from before", first.Name(), n)
	}
}
