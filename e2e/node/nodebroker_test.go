//go:build e2e

package node

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

const nodeExchange = "asya-node"

var nodeBrokers = []testenv.NodeBroker{
	{
		Transport: "rabbitmq",
		Name:      func(n string) string { return n },
		EndQueue: func(t *testing.T, ctx context.Context, actor string) {
			testenv.WithChannel(t, func(ch *amqp.Channel) error {
				if err := ch.ExchangeDeclare(nodeExchange, "topic", true, false, false, false, nil); err != nil {
					return err
				}
				if _, err := ch.QueueDeclare("asya-"+actor, true, false, false, false, nil); err != nil {
					return err
				}
				if err := ch.QueueBind("asya-"+actor, actor, nodeExchange, false, nil); err != nil {
					return err
				}
				_, err := ch.QueuePurge("asya-"+actor, false)
				return err
			})
		},
		Send: func(t *testing.T, ctx context.Context, actor string, m testenv.Envelope) {
			publishVia(t, ctx, testenv.RabbitURL(), nodeExchange, actor, m)
		},
		Take: func(t *testing.T, ctx context.Context, actor string) []testenv.Envelope {
			var out []testenv.Envelope
			testenv.WithChannel(t, func(ch *amqp.Channel) error {
				for {
					d, ok, err := ch.Get("asya-"+actor, true)
					if err != nil || !ok {
						return err
					}
					out = append(out, testenv.DecodeEnvelope(t, d.Body))
				}
			})
			return out
		},
	},
	{
		Transport: "sqs",
		Name:      func(n string) string { return n + "-" + env.RunID },
		EndQueue: func(t *testing.T, ctx context.Context, actor string) {
			if _, err := testenv.SQSClient().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("asya-" + actor)}); err != nil {
				t.Fatalf("create queue asya-%s: %v", actor, err)
			}
			sqsTake(t, ctx, actor)
		},
		Send: func(t *testing.T, ctx context.Context, actor string, m testenv.Envelope) {
			body, _ := json.Marshal(m)
			url := testenv.SQSQueueURL(t, ctx, "asya-"+actor)
			if _, err := testenv.SQSClient().SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body))}); err != nil {
				t.Fatalf("send to %s: %v", actor, err)
			}
		},
		Take: sqsTake,
	},
}

func sqsTake(t *testing.T, ctx context.Context, actor string) []testenv.Envelope {
	url := testenv.SQSQueueURL(t, ctx, "asya-"+actor)
	var out []testenv.Envelope
	for {
		r, err := testenv.SQSClient().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil {
			t.Fatalf("receive from %s: %v", actor, err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			out = append(out, testenv.DecodeEnvelope(t, []byte(aws.ToString(m.Body))))
			if _, err := testenv.SQSClient().DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete from %s: %v", actor, err)
			}
		}
	}
}

// collector gathers what arrives on an end actor's queue, by envelope id.
type collector struct {
	b     testenv.NodeBroker
	actor string
	got   map[string][]testenv.Envelope
}

func newCollector(t *testing.T, ctx context.Context, b testenv.NodeBroker, actor string) *collector {
	b.EndQueue(t, ctx, actor)
	return &collector{b: b, actor: actor, got: map[string][]testenv.Envelope{}}
}

// await polls until every id has arrived, and returns what each got.
func (c *collector) await(t *testing.T, ctx context.Context, within time.Duration, ids ...string) map[string][]testenv.Envelope {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, m := range c.b.Take(t, ctx, c.actor) {
			c.got[m.ID] = append(c.got[m.ID], m)
		}
		missing := 0
		for _, id := range ids {
			if len(c.got[id]) == 0 {
				missing++
			}
		}
		if missing == 0 {
			return c.got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages not on asya-%s after %s", missing, len(ids), c.actor, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// message is an envelope for one actor, with a fresh id.
func message(actor string, payload testenv.Obj) testenv.Envelope {
	return testenv.Envelope{ID: testenv.UniqueName(actor), Route: testenv.Route{Actors: []string{actor}}, Payload: payload}
}
