package sqs

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asya-sh/asya-sync/internal/brokertest"
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

// countingClient counts SQS's API calls by action.
type countingClient struct{ brokertest.Calls }

func (c *countingClient) RoundTrip(req *http.Request) (*http.Response, error) {
	c.Add(strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "AmazonSQS."))
	return http.DefaultTransport.RoundTrip(req)
}

// TestSQSEnsureCalls: what the owner record costs an Ensure, as
// docs/performance.md#owner-records counts it: a ListQueueTags per queue,
// and with the DLQ on one more for the queue before its DLQ is touched
// (unless the queue is new); and a queue another claim holds is written
// nothing.
func TestSQSEnsureCalls(t *testing.T) {
	testenv.NeedSQS(t)
	for _, tc := range []struct {
		name                   string
		dlq                    bool
		readsFirst, readsAgain int
	}{
		{"DLQ off", false, 1, 1},
		{"DLQ on", true, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := &countingClient{}
			cfg := sqsConfig()
			cfg.Queues.DLQ.Enabled = tc.dlq
			s, err := New(context.Background(), "sqs-calls", cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.client = awssqs.New(s.client.Options(), func(o *awssqs.Options) { o.HTTPClient = &http.Client{Transport: counter} })
			ctx := testenv.Context(t)
			first, second := sqsCollision(t, s)
			for _, step := range []struct {
				what  string
				q     transport.Queue
				reads int
			}{
				{"a new queue", first, tc.readsFirst},
				{"the same queue again", first, tc.readsAgain},
				{"the queue, by another claim", second, 1},
			} {
				err := s.Ensure(ctx, step.q)
				_, held := transport.HeldBy(err)
				if err != nil && !held {
					t.Fatal(err)
				}
				calls := counter.Take()
				t.Logf("%s: %v", step.what, calls)
				if n := count(calls, "ListQueueTags"); n != step.reads {
					t.Errorf("%s: %d ListQueueTags, want %d (calls %v)", step.what, n, step.reads, calls)
				}
				if writes := count(calls, "TagQueue", "SetQueueAttributes", "DeleteQueue"); held && writes > 0 {
					t.Errorf("%s: %d writes to a queue another claim holds (calls %v)", step.what, writes, calls)
				}
			}
		})
	}
}

func count(calls []string, actions ...string) int {
	n := 0
	for _, c := range calls {
		if slices.Contains(actions, c) {
			n++
		}
	}
	return n
}
