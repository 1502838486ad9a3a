package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

func TestOnEndpoint(t *testing.T) {
	for _, tc := range []struct{ url, endpoint, want string }{
		{"http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/asya-a", "http://127.0.0.1:9324",
			"http://127.0.0.1:9324/000000000000/asya-a"},
		{"https://sqs.eu-west-1.amazonaws.com/123/asya-a", "", "https://sqs.eu-west-1.amazonaws.com/123/asya-a"},
		{"http://127.0.0.1:9324/000000000000/asya-a", "http://127.0.0.1:9324", "http://127.0.0.1:9324/000000000000/asya-a"},
	} {
		if got := onEndpoint(tc.url, tc.endpoint); got != tc.want {
			t.Errorf("onEndpoint(%q, %q) = %q, want %q", tc.url, tc.endpoint, got, tc.want)
		}
	}
}

// sqsSetup creates the queues of the sidecar's actor and end actors on
// the emulator, and deletes them after the test.
func sqsSetup(t *testing.T) (*sqsQueues, config) {
	t.Helper()
	testenv.NeedSQS(t)
	cfg := testConfig("sqs", socketDir(t))
	q, err := newSQS(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{cfg.Actor, cfg.HappyEnd, cfg.ErrorEnd} {
		out, err := q.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(queueName(a))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = q.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		})
	}
	return q, cfg
}

// sqsTake waits for a message on the actor's queue and deletes it.
func sqsTake(t *testing.T, q *sqsQueues, actor string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	u, err := q.queueURL(ctx, actor)
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, WaitTimeSeconds: 1})
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		if out != nil && len(out.Messages) > 0 {
			m := out.Messages[0]
			_, _ = q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &u, ReceiptHandle: m.ReceiptHandle})
			return []byte(aws.ToString(m.Body))
		}
	}
	t.Fatalf("no message on %s within 15s", queueName(actor))
	return nil
}

func TestSQSRouting(t *testing.T) {
	t.Parallel()
	q, cfg := sqsSetup(t)
	next := testenv.ActorName("next")
	startRuntime(t, cfg.SocketDir, "echo")
	startSidecar(t, cfg)
	ctx := context.Background()

	if err := q.send(ctx, cfg.Actor, envelopeOf("s1", map[string]any{"n": 1}, 0, cfg.Actor)); err != nil {
		t.Fatal(err)
	}
	got := decode(t, sqsTake(t, q, cfg.HappyEnd))
	if got.ID != "s1" || got.Route.Current != 1 || got.Payload["echo"].(map[string]any)["n"] != 1.0 {
		t.Errorf("happy-end got %+v", got)
	}

	// A route on to an actor whose queue is missing cannot be sent: the
	// message stays, and goes on once the queue exists.
	if err := q.send(ctx, cfg.Actor, envelopeOf("s2", "x", 0, cfg.Actor, next)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the sidecar tries, and puts it back
	out, err := q.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queueName(next))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = q.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	})
	if got := decode(t, sqsTake(t, q, next)); got.ID != "s2" || got.Route.Current != 1 || got.Payload["echo"] != "x" {
		t.Errorf("%s got %+v", next, got)
	}
}

func TestSQSHandlerErrorToErrorEnd(t *testing.T) {
	t.Parallel()
	q, cfg := sqsSetup(t)
	startRuntime(t, cfg.SocketDir, "fail")
	startSidecar(t, cfg)
	if err := q.send(context.Background(), cfg.Actor, envelopeOf("s3", 3, 0, cfg.Actor)); err != nil {
		t.Fatal(err)
	}
	got := decode(t, sqsTake(t, q, cfg.ErrorEnd))
	if msg, _ := got.Payload["error"].(string); got.ID != "s3" || msg != "processing_error" || got.Payload["original_payload"] != 3.0 {
		t.Errorf("error-end got %+v", got)
	}
	if !strings.Contains(got.Payload["details"].(map[string]any)["message"].(string), "refused 3") {
		t.Errorf("error-end details %+v", got.Payload["details"])
	}
}
