package sync_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/internal/testenv"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
)

// These tests run two actors of one name in two namespaces through the
// real hooks against the real RabbitMQ and the SQS emulator of
// .ci/services.sh: one queue, one owner, and no message lost to the other.

const sqsEndpoint = "http://127.0.0.1:9324"

func newHandler(t *testing.T) *hooksync.Handler {
	t.Helper()
	// The SQS emulator accepts any credentials; the SDK needs some.
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return hooksync.NewBrokerHandler(t, `
flatActors: {transport: mq}
transports:
  mq: {type: rabbitmq, config: {host: 127.0.0.1, port: 5672}}
  sqs: {type: sqs, config: {region: us-east-1, accountId: "000000000000", endpoint: "`+sqsEndpoint+`"}}
  mq-unmanaged: {type: rabbitmq, config: {host: 127.0.0.1, port: 5672, queues: {manage: false}}}
  sqs-unmanaged: {type: sqs, config: {region: us-east-1, accountId: "000000000000", endpoint: "`+sqsEndpoint+`", queues: {manage: false}}}
`)
}

// actor is one AsyncActor as the API server returns it.
type actor struct {
	namespace, name, transport string
	created                    time.Time
	deleting                   bool
}

func (a actor) object() map[string]any {
	meta := map[string]any{"name": a.name, "namespace": a.namespace, "uid": "uid-" + a.namespace,
		"generation": 1, "creationTimestamp": a.created.UTC().Format(time.RFC3339)}
	if a.deleting {
		meta["deletionTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	}
	return map[string]any{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": meta,
		"spec": map[string]any{"transport": a.transport, "workload": map[string]any{"template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "asya-runtime", "image": "python:3.12"}}}}}}}
}

// request is a hook request for self, decoded, with every actor of the
// name as related objects, keyed namespace/name as in hook version v2.
func request(t *testing.T, self actor, all ...actor) *hook.SyncRequest {
	t.Helper()
	group := map[string]any{}
	for _, a := range all {
		group[a.namespace+"/"+a.name] = a.object()
	}
	return hooksync.DecodeBody(t, map[string]any{"parent": self.object(), "finalizing": self.deleting,
		"related": map[string]any{v1alpha1.Kind + "." + v1alpha1.GroupVersion.String(): group}})
}

// broker is what the test itself does on a transport's broker.
type broker interface {
	// declare creates the queue as the Asya operator did: a plain durable
	// RabbitMQ queue, an SQS queue with default attributes and no tags.
	declare(t *testing.T, queue string)
	publish(t *testing.T, queue string)
	// send sends a message as a flat actor's sidecar in namespace ns does
	// to actor: on RabbitMQ to the namespace's exchange under the actor's
	// name, where the bindings decide which queue gets it; on SQS to the
	// queue asya-<ns>-<actor> by name.
	send(t *testing.T, ns, actor string)
	// messages is the queue's message count, or -1 when the queue is gone.
	messages(t *testing.T, queue string) int
	// remove deletes what a test leaves on the broker: the queues named,
	// and on RabbitMQ their owner records and the namespaces' exchanges.
	remove(t *testing.T, namespaces []string, queues ...string)
}

func TestOneQueueOneOwnerAcrossNamespaces(t *testing.T) {
	eachBroker(t, func(t *testing.T, transportName string, b broker, h *hooksync.Handler) {
		ctx := context.Background()
		name := testenv.UniqueName("shared")
		queue := transport.QueueName(name)
		owner := actor{"team-a", name, transportName, time.Now().Add(-time.Hour), false}
		other := actor{"team-b", name, transportName, time.Now(), false}

		resp, err := h.Answer(ctx, request(t, owner, owner, other))
		if err != nil || resp.Status.TransportStatus != "Ready" {
			t.Fatalf("owner's sync: err=%v status=%+v, want the queue ensured", err, resp.Status)
		}
		resp, err = h.Answer(ctx, request(t, other, owner, other))
		if err != nil {
			t.Fatal(err)
		}
		if c := condition(resp, "TransportReady"); resp.Status.Status != "TransportError" || c.Reason != "QueueConflict" {
			t.Fatalf("other's sync: status %q, TransportReady %+v; want TransportError, QueueConflict", resp.Status.Status, c)
		}

		b.publish(t, queue)
		gone := other
		gone.deleting = true
		fin, err := h.Answer(ctx, request(t, gone, owner, gone))
		if err != nil || !fin.Finalized {
			t.Fatalf("finalize of the non-owner: err=%v finalized=%v, want finalized", err, fin.Finalized)
		}
		if n := b.messages(t, queue); n != 1 {
			t.Fatalf("after the non-owner's finalize the queue holds %d messages (-1: gone), want the 1 published", n)
		}

		last := owner
		last.deleting = true
		fin, err = h.Answer(ctx, request(t, last, last))
		if err != nil || !fin.Finalized {
			t.Fatalf("finalize of the owner: err=%v finalized=%v, want finalized", err, fin.Finalized)
		}
		if n := b.messages(t, queue); n != -1 {
			t.Errorf("after the last actor's finalize the queue still exists with %d messages", n)
		}
	})
}

// TestAdoptsTheOperatorsQueue: a queue the Asya operator created carries no
// marker of ours and holds messages; the first actor that claims it takes
// it over in place, messages kept.
func TestAdoptsTheOperatorsQueue(t *testing.T) {
	eachBroker(t, func(t *testing.T, transportName string, b broker, h *hooksync.Handler) {
		ctx := context.Background()
		name := testenv.UniqueName("legacy")
		queue := transport.QueueName(name)
		b.declare(t, queue)
		b.publish(t, queue)
		b.publish(t, queue)
		a := actor{"ml", name, transportName, time.Now(), false}
		resp, err := h.Answer(ctx, request(t, a, a))
		if err != nil || resp.Status.TransportStatus != "Ready" {
			t.Fatalf("sync: err=%v status=%+v, want the operator's queue taken over", err, resp.Status)
		}
		if n := b.messages(t, queue); n != 2 {
			t.Errorf("after the takeover the queue holds %d messages (-1: gone), want the 2 published", n)
		}
		gone := a
		gone.deleting = true
		if fin, err := h.Answer(ctx, request(t, gone, gone)); err != nil || !fin.Finalized {
			t.Fatalf("cleanup: err=%v finalized=%v", err, fin.Finalized)
		}
	})
}

// eachBroker runs test once per transport of newHandler, against its real
// broker.
func eachBroker(t *testing.T, test func(t *testing.T, transportName string, b broker, h *hooksync.Handler)) {
	for _, tc := range []struct {
		transport string
		broker    func(t *testing.T) broker
	}{
		{"mq", rabbitBroker},
		{"sqs", sqsBroker},
	} {
		t.Run(tc.transport, func(t *testing.T) { test(t, tc.transport, tc.broker(t), newHandler(t)) })
	}
}

func condition(resp *hook.Response, typ string) (c struct{ Reason, Message string }) {
	for _, cond := range resp.Status.Conditions {
		if cond.Type == typ {
			c.Reason, c.Message = cond.Reason, cond.Message
		}
	}
	return c
}

type rabbit struct{ conn *amqp.Connection }

func rabbitBroker(t *testing.T) broker { return rabbit{testenv.Rabbit(t)} }

func (r rabbit) declare(t *testing.T, queue string) {
	t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
}

func (r rabbit) publish(t *testing.T, queue string) { testenv.Publish(t, r.conn, queue) }

func (r rabbit) messages(t *testing.T, queue string) int { return testenv.Messages(t, r.conn, queue) }

func (r rabbit) send(t *testing.T, ns, actor string) {
	t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	exchange := rabbitmq.DefaultExchange + "-" + ns
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirm, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), exchange, actor, false, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("for " + ns + "/" + actor)})
	if err != nil || !confirm.Wait() {
		t.Fatalf("send to %s/%s: %v", ns, actor, err)
	}
}

func (r rabbit) remove(t *testing.T, namespaces []string, queues ...string) {
	t.Helper()
	for _, q := range queues {
		testenv.DeleteQueue(t, r.conn, q)
	}
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for _, ns := range namespaces {
		if err := ch.ExchangeDelete(rabbitmq.DefaultExchange+"-"+ns, false, false); err != nil {
			t.Errorf("delete the exchange of %s: %v", ns, err)
		}
	}
}

type sqsQueues struct{ client *sqs.Client }

func sqsBroker(t *testing.T) broker {
	t.Helper()
	if c, err := net.DialTimeout("tcp", "127.0.0.1:9324", time.Second); err != nil {
		testenv.Missing(t, "the SQS emulator is not listening on 127.0.0.1:9324", err)
	} else {
		c.Close()
	}
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(sqsEndpoint),
		Credentials: aws.AnonymousCredentials{}})
	return sqsQueues{client}
}

func (s sqsQueues) url(t *testing.T, queue string) (string, bool) {
	t.Helper()
	out, err := s.client.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	var apiErr smithy.APIError
	switch {
	case err == nil:
		return aws.ToString(out.QueueUrl), true
	case errors.As(err, &apiErr) && strings.HasSuffix(apiErr.ErrorCode(), "QueueDoesNotExist"),
		errors.As(err, &apiErr) && strings.HasSuffix(apiErr.ErrorCode(), "NonExistentQueue"):
		return "", false
	}
	t.Fatalf("GetQueueUrl %s: %v", queue, err)
	return "", false
}

func (s sqsQueues) declare(t *testing.T, queue string) {
	t.Helper()
	if _, err := s.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(queue)}); err != nil {
		t.Fatal(err)
	}
}

func (s sqsQueues) publish(t *testing.T, queue string) {
	t.Helper()
	url, ok := s.url(t, queue)
	if !ok {
		t.Fatalf("queue %s does not exist", queue)
	}
	before := s.messages(t, queue)
	if _, err := s.client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	// The emulator counts a message only once a timer of its own has run
	// (even with no delay), so a count read at once may miss it; wait, as
	// the RabbitMQ publish waits for the broker's confirm.
	testenv.Eventually(t, 5*time.Second, "the message counted", func() bool { return s.messages(t, queue) > before })
}

func (s sqsQueues) send(t *testing.T, ns, actor string) {
	s.publish(t, transport.FlatQueueName(ns, actor))
}

func (s sqsQueues) remove(t *testing.T, _ []string, queues ...string) {
	t.Helper()
	for _, q := range queues {
		if url, ok := s.url(t, q); ok {
			if _, err := s.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
				t.Errorf("delete %s: %v", q, err)
			}
		}
	}
}

func (s sqsQueues) messages(t *testing.T, queue string) int {
	t.Helper()
	url, ok := s.url(t, queue)
	if !ok {
		return -1
	}
	out, err := s.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	if err != nil {
		t.Fatal(fmt.Errorf("ApproximateNumberOfMessages: %w", err))
	}
	return n
}
