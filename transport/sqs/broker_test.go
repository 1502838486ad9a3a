package sqs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/asya-sh/asya-sync/internal/brokertest"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

func TestMain(m *testing.M) {
	testenv.UseTestAWSCredentials()
	os.Exit(m.Run())
}

func sqsConfig(change ...func(*Settings)) Settings {
	wait := int32(20)
	cfg := Settings{
		Region: "us-east-1", AccountID: "000000000000", Endpoint: testenv.SQSEndpoint(),
		WaitTimeSeconds: &wait, Tags: map[string]string{"team": "ml"},
		Queues: transport.Queues{DLQ: transport.DLQ{MaxRetryCount: 3, RetentionDays: 14}},
	}
	for _, c := range change {
		c(&cfg)
	}
	return cfg
}

func withSQSDLQ(c *Settings) { c.Queues.DLQ.Enabled = true }

func newSQS(t *testing.T, change ...func(*Settings)) *Broker {
	t.Helper()
	testenv.NeedSQS(t)
	s, err := New(context.Background(), "sqs-test", sqsConfig(change...), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cleanupSQSQueues deletes the actor's queues at the end of the test.
func cleanupSQSQueues(t *testing.T, s *Broker, actor string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Delete(ctx, transport.Queue{Actor: actor})
	})
}

func sqsAttributes(t *testing.T, s *Broker, queue string) map[string]string {
	t.Helper()
	ctx := testenv.Context(t)
	url, err := s.queueURL(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: &url, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes
}

func sqsTags(t *testing.T, s *Broker, queue string) map[string]string {
	t.Helper()
	ctx := testenv.Context(t)
	url, err := s.queueURL(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.client.ListQueueTags(ctx, &awssqs.ListQueueTagsInput{QueueUrl: &url})
	if err != nil {
		t.Fatal(err)
	}
	return out.Tags
}

func sendSQS(t *testing.T, s *Broker, queue, body string) {
	t.Helper()
	ctx := testenv.Context(t)
	url, err := s.queueURL(ctx, queue)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
}

func TestSQSEnsureCreatesQueueWithAttributesAndTags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		change         func(*Settings)
		processing     int32
		wantVisibility string
		wantDLQ        bool
	}{
		{"twice the processing timeout", func(*Settings) {}, 45, "90", false},
		{"default processing timeout", func(*Settings) {}, 0, "600", false},
		{"configured visibility timeout", func(c *Settings) { c.VisibilityTimeout = 77 }, 45, "77", false},
		{"with DLQ", withSQSDLQ, 45, "90", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSQS(t, tt.change)
			actor := testenv.ActorName("sqs")
			cleanupSQSQueues(t, s, actor)
			q := transport.Queue{Actor: actor, Namespace: "team-a", ProcessingTimeout: tt.processing}
			if err := s.Ensure(testenv.Context(t), q); err != nil {
				t.Fatal(err)
			}

			attrs := sqsAttributes(t, s, q.Name())
			if attrs[attrVisibilityTimeout] != tt.wantVisibility || attrs[attrWaitTime] != "20" {
				t.Errorf("VisibilityTimeout=%s ReceiveMessageWaitTimeSeconds=%s, want %s and 20",
					attrs[attrVisibilityTimeout], attrs[attrWaitTime], tt.wantVisibility)
			}
			// The status's ARN, made from the configuration, is the one
			// the emulator reports: it runs in the configured region and
			// account.
			if want := s.cfg.QueueIdentifier(q.Name()); attrs[attrQueueArn] != want {
				t.Errorf("QueueArn = %s, want the status's %s", attrs[attrQueueArn], want)
			}
			wantTags := map[string]string{TagOwner: actor, TagActor: actor, TagNamespace: "team-a", "team": "ml"}
			if diff := cmp.Diff(wantTags, sqsTags(t, s, q.Name())); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
			if !tt.wantDLQ {
				if attrs[attrRedrivePolicy] != "" {
					t.Errorf("RedrivePolicy %s with the DLQ off", attrs[attrRedrivePolicy])
				}
				return
			}
			dlq := sqsAttributes(t, s, transport.Queue{Actor: actor}.DLQName())
			if dlq[attrRetention] != "1209600" {
				t.Errorf("DLQ MessageRetentionPeriod = %s, want 14 days", dlq[attrRetention])
			}
			var policy struct {
				Target   string `json:"deadLetterTargetArn"`
				MaxCount any    `json:"maxReceiveCount"`
			}
			if err := json.Unmarshal([]byte(attrs[attrRedrivePolicy]), &policy); err != nil {
				t.Fatalf("RedrivePolicy %q: %v", attrs[attrRedrivePolicy], err)
			}
			if policy.Target != dlq[attrQueueArn] || policy.MaxCount == nil || toString(policy.MaxCount) != "3" {
				t.Errorf("RedrivePolicy = %s, want the DLQ %s after 3 receives", attrs[attrRedrivePolicy], dlq[attrQueueArn])
			}
		})
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// A queue that exists with other attributes is updated, not recreated:
// its messages stay.
func TestSQSEnsureUpdatesAttributesInPlace(t *testing.T) {
	t.Parallel()
	s := newSQS(t)
	actor := testenv.ActorName("sqsupdate")
	cleanupSQSQueues(t, s, actor)
	ctx := testenv.Context(t)
	if err := s.Ensure(ctx, transport.Queue{Actor: actor, Namespace: "a", ProcessingTimeout: 30}); err != nil {
		t.Fatal(err)
	}
	sendSQS(t, s, transport.QueueName(actor), "kept")

	if err := s.Ensure(ctx, transport.Queue{Actor: actor, Namespace: "b", ProcessingTimeout: 120}); err != nil {
		t.Fatalf("Ensure with a new processing timeout: %v", err)
	}
	attrs := sqsAttributes(t, s, transport.QueueName(actor))
	if attrs[attrVisibilityTimeout] != "240" {
		t.Errorf("VisibilityTimeout = %s, want 240", attrs[attrVisibilityTimeout])
	}
	if tags := sqsTags(t, s, transport.QueueName(actor)); tags[TagNamespace] != "b" {
		t.Errorf("namespace tag = %q, want b", tags[TagNamespace])
	}
	if attrs[attrReady] != "1" {
		t.Errorf("ApproximateNumberOfMessages = %s, want the message sent before to be kept", attrs[attrReady])
	}

	// Turning the DLQ on and off again updates the redrive policy in place.
	withDLQ := newSQS(t, withSQSDLQ)
	if err := withDLQ.Ensure(ctx, transport.Queue{Actor: actor, Namespace: "b", ProcessingTimeout: 120}); err != nil {
		t.Fatal(err)
	}
	if attrs := sqsAttributes(t, s, transport.QueueName(actor)); !strings.Contains(attrs[attrRedrivePolicy], transport.Queue{Actor: actor}.DLQName()) {
		t.Errorf("RedrivePolicy = %q after turning the DLQ on", attrs[attrRedrivePolicy])
	}
	if err := s.Ensure(ctx, transport.Queue{Actor: actor, Namespace: "b", ProcessingTimeout: 120}); err != nil {
		t.Fatal(err)
	}
	if attrs := sqsAttributes(t, s, transport.QueueName(actor)); attrs[attrRedrivePolicy] != "" || attrs[attrReady] != "1" {
		t.Errorf("after turning the DLQ off: RedrivePolicy = %q, messages = %s", attrs[attrRedrivePolicy], attrs[attrReady])
	}
}

func TestSQSQueueDeletedRecently(t *testing.T) {
	t.Parallel()
	s := newSQS(t)
	actor := testenv.ActorName("sqsrecent")
	ctx := testenv.Context(t)
	q := transport.Queue{Actor: actor, ProcessingTimeout: 30}
	if err := s.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, q); err != nil {
		t.Fatal(err)
	}
	te := brokertest.WantReason(t, s.Ensure(ctx, q), transport.ReasonQueueDeletedRecently)
	if te.RetryAfter != 65*time.Second {
		t.Errorf("RetryAfter = %v, want 65s", te.RetryAfter)
	}
	t.Log(te)
}

func TestSQSAutoCreateOff(t *testing.T) {
	t.Parallel()
	s := newSQS(t, func(c *Settings) { c.Queues.AutoCreate = aws.Bool(false) })
	actor := testenv.ActorName("sqsnocreate")
	ctx := testenv.Context(t)
	te := brokertest.WantReason(t, s.Ensure(ctx, transport.Queue{Actor: actor}), transport.ReasonQueueNotFound)
	if !strings.Contains(te.Message, "autoCreate is off") {
		t.Errorf("message %q does not say why", te.Message)
	}

	creator := newSQS(t)
	cleanupSQSQueues(t, creator, actor)
	if err := creator.Ensure(ctx, transport.Queue{Actor: actor}); err != nil {
		t.Fatal(err)
	}
	if err := s.Ensure(ctx, transport.Queue{Actor: actor}); err != nil {
		t.Errorf("Ensure of an existing queue with autoCreate off: %v", err)
	}
}

func TestSQSDeleteIsIdempotent(t *testing.T) {
	t.Parallel()
	s := newSQS(t, withSQSDLQ)
	actor := testenv.ActorName("sqsdelete")
	ctx := testenv.Context(t)
	q := transport.Queue{Actor: actor}
	if err := s.Delete(ctx, q); err != nil {
		t.Fatalf("Delete of a queue that never existed: %v", err)
	}
	if err := s.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	sendSQS(t, s, q.Name(), "gone with the queue")
	for i := range 2 {
		if err := s.Delete(ctx, q); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	fresh := newSQS(t) // no cached URLs
	for _, name := range []string{q.Name(), transport.Queue{Actor: actor}.DLQName()} {
		if _, err := fresh.queueURL(ctx, name); !isNotFound(err) {
			t.Errorf("%s after Delete: %v, want it gone", name, err)
		}
	}
}

func TestSQSCounts(t *testing.T) {
	t.Parallel()
	s := newSQS(t)
	actor := testenv.ActorName("sqscounts")
	cleanupSQSQueues(t, s, actor)
	ctx := testenv.Context(t)
	q := transport.Queue{Actor: actor, ProcessingTimeout: 30}
	if err := s.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sendSQS(t, s, q.Name(), "m")
	}
	url, _ := s.queueURL(ctx, q.Name())
	if _, err := s.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 1}); err != nil {
		t.Fatal(err)
	}
	counts, err := s.Counts(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	// SQS counts 2 visible messages; local-aws-sqs counts the one in
	// flight among them too.
	if got := brokertest.Count(counts.Queued) + "/" + brokertest.Count(counts.Processing); got != "2/1" && got != "3/1" {
		t.Errorf("queued/processing = %s, want 2/1", got)
	}

	_, err = s.Counts(ctx, transport.Queue{Actor: testenv.ActorName("sqsnocounts")})
	brokertest.WantReason(t, err, transport.ReasonQueueNotFound)
}

func TestSQSUnreachableEndpoint(t *testing.T) {
	t.Parallel()
	s, err := New(context.Background(), "down", sqsConfig(func(c *Settings) {
		c.Endpoint = "http://127.0.0.1:" + strconv.Itoa(testenv.ClosedPort(t))
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The SDK retries twice, within about 3 s, before it gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	te := brokertest.WantReason(t, s.Ensure(ctx, transport.Queue{Actor: testenv.ActorName("down")}), transport.ReasonBrokerUnavailable)
	if !strings.Contains(te.Error(), "connection refused") {
		t.Errorf("%q does not carry the cause", te.Error())
	}
}

func TestSQSErrorTextIsStable(t *testing.T) {
	raw := &smithy.OperationError{ServiceID: "SQS", OperationName: "CreateQueue",
		Err: &smithy.GenericAPIError{Code: "QueueDeletedRecently", Message: "wait 60 seconds"}}
	s := &Broker{}
	got := s.explain(fmt.Errorf("RequestID: 1234, %w", raw), "creating queue asya-x")
	te := transport.AsError(got)
	if te.Reason != transport.ReasonQueueDeletedRecently || strings.Contains(te.Error(), "RequestID") ||
		!strings.Contains(te.Error(), "QueueDeletedRecently: wait 60 seconds") {
		t.Errorf("explained error = %q (reason %s), want the code and message without the request ID", te.Error(), te.Reason)
	}
}

// A queue adopted from upstream's Crossplane installation redrives to the
// namespace's asya-<ns>-dlq, which asya-sync did not make: with the DLQ
// off, ensuring the queue updates its other attributes and keeps that
// policy, so its failed messages still go where they went.
func TestSQSEnsureKeepsAnotherRedrivePolicy(t *testing.T) {
	t.Parallel()
	s := newSQS(t)
	ctx := testenv.Context(t)
	ns, actor := testenv.ActorName("upstream"), "worker"
	q := transport.Queue{Actor: actor, Namespace: ns, ProcessingTimeout: 300, Scoped: true}
	dlqName := "asya-" + ns + "-dlq"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, name := range []string{q.Name(), dlqName} {
			_ = s.deleteQueue(ctx, name, q.Claim())
		}
	})
	// As upstream's SQS composition makes them.
	dlq, err := s.client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(dlqName)})
	if err != nil {
		t.Fatal(err)
	}
	dlqARN, err := s.queueARN(ctx, dlqName, aws.ToString(dlq.QueueUrl))
	if err != nil {
		t.Fatal(err)
	}
	upstreamPolicy := `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":3}`
	if _, err := s.client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(q.Name()), Attributes: map[string]string{
		attrVisibilityTimeout: "30", attrRetention: "345600", attrWaitTime: "20", attrRedrivePolicy: upstreamPolicy,
	}}); err != nil {
		t.Fatal(err)
	}
	sendSQS(t, s, q.Name(), "waiting since upstream")

	for i := range 2 { // adopting, then a later ensure of the queue as asya-sync left it
		if err := s.Ensure(ctx, q); err != nil {
			t.Fatalf("Ensure #%d: %v", i+1, err)
		}
		attrs := sqsAttributes(t, s, q.Name())
		var policy struct {
			Target string `json:"deadLetterTargetArn"`
		}
		if err := json.Unmarshal([]byte(attrs[attrRedrivePolicy]), &policy); err != nil || policy.Target != dlqARN {
			t.Errorf("Ensure #%d: RedrivePolicy %q, want upstream's to %s", i+1, attrs[attrRedrivePolicy], dlqARN)
		}
		if attrs[attrVisibilityTimeout] != "600" || attrs[attrReady] != "1" {
			t.Errorf("Ensure #%d: VisibilityTimeout %s, messages %s; want asya-sync's 600 and the message kept",
				i+1, attrs[attrVisibilityTimeout], attrs[attrReady])
		}
	}
}
