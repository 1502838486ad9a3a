//go:build e2e

package e2e

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

// envelope is the Asya message: what a gateway or a sidecar puts on an
// actor's queue, and what comes out on happy-end and error-end.
type envelope struct {
	ID      string `json:"id"`
	Route   route  `json:"route"`
	Payload any    `json:"payload"`
	Error   any    `json:"error,omitempty"`
	// Raw is the message as it arrived, for what the fields above leave
	// out (a flat envelope's route and status).
	Raw json.RawMessage `json:"-"`
}

type route struct {
	Actors  []string `json:"actors"`
	Current int      `json:"current"`
}

// nodeBroker is a transport as the node tier's tests use it: put an
// envelope on an actor's queue, and take the envelopes an end actor's queue
// received.
type nodeBroker struct {
	transport string
	// name is the actor's name for this run (SQS refuses a queue name
	// deleted within the last 60 s).
	name func(string) string
	// endQueue makes an end actor's queue, empty, where the sidecars route.
	endQueue func(t *testing.T, ctx context.Context, actor string)
	send     func(t *testing.T, ctx context.Context, actor string, m envelope)
	// take returns the envelopes on the actor's queue, taking them off.
	take func(t *testing.T, ctx context.Context, actor string) []envelope
}

const nodeExchange = "asya-node"

var nodeBrokers = []nodeBroker{
	{
		transport: "rabbitmq",
		name:      func(n string) string { return n },
		endQueue: func(t *testing.T, ctx context.Context, actor string) {
			withChannel(t, func(ch *amqp.Channel) error {
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
		send: func(t *testing.T, ctx context.Context, actor string, m envelope) {
			publishVia(t, ctx, testenv.RabbitURL(), nodeExchange, actor, m)
		},
		take: func(t *testing.T, ctx context.Context, actor string) []envelope {
			var out []envelope
			withChannel(t, func(ch *amqp.Channel) error {
				for {
					d, ok, err := ch.Get("asya-"+actor, true)
					if err != nil || !ok {
						return err
					}
					out = append(out, decodeEnvelope(t, d.Body))
				}
			})
			return out
		},
	},
	{
		transport: "sqs",
		name:      func(n string) string { return n + "-" + env.runID },
		endQueue: func(t *testing.T, ctx context.Context, actor string) {
			if _, err := sqsClient().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("asya-" + actor)}); err != nil {
				t.Fatalf("create queue asya-%s: %v", actor, err)
			}
			sqsTake(t, ctx, actor)
		},
		send: func(t *testing.T, ctx context.Context, actor string, m envelope) {
			body, _ := json.Marshal(m)
			url := sqsQueueURL(t, ctx, "asya-"+actor)
			if _, err := sqsClient().SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body))}); err != nil {
				t.Fatalf("send to %s: %v", actor, err)
			}
		},
		take: sqsTake,
	},
}

func sqsTake(t *testing.T, ctx context.Context, actor string) []envelope {
	url := sqsQueueURL(t, ctx, "asya-"+actor)
	var out []envelope
	for {
		r, err := sqsClient().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil {
			t.Fatalf("receive from %s: %v", actor, err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			out = append(out, decodeEnvelope(t, []byte(aws.ToString(m.Body))))
			if _, err := sqsClient().DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete from %s: %v", actor, err)
			}
		}
	}
}

func withChannel(t *testing.T, do func(ch *amqp.Channel) error) {
	t.Helper()
	withAMQP(t, testenv.RabbitURL(), do)
}

func decodeEnvelope(t *testing.T, body []byte) envelope {
	t.Helper()
	var m envelope
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not an envelope: %v: %s", err, body)
	}
	m.Raw = body
	return m
}

// collector gathers what arrives on an end actor's queue, by envelope id.
type collector struct {
	b     nodeBroker
	actor string
	got   map[string][]envelope
}

func newCollector(t *testing.T, ctx context.Context, b nodeBroker, actor string) *collector {
	b.endQueue(t, ctx, actor)
	return &collector{b: b, actor: actor, got: map[string][]envelope{}}
}

// await polls until every id has arrived, and returns what each got.
func (c *collector) await(t *testing.T, ctx context.Context, within time.Duration, ids ...string) map[string][]envelope {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, m := range c.b.take(t, ctx, c.actor) {
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
func message(actor string, payload obj) envelope {
	return envelope{ID: testenv.UniqueName(actor), Route: route{Actors: []string{actor}}, Payload: payload}
}
