package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// sqsQueues long-polls the actor's queue and sends with SendMessage, as
// both generations of the real sidecar do (one message per receive, the
// queue's URL by its name).
// Credentials come from the SDK's default chain: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, or the pod's IRSA role.
type sqsQueues struct {
	cfg    config
	client *sqs.Client
	urls   map[string]string
}

// sqsHandle is what ack and requeue need of a received message.
type sqsHandle struct{ queueURL, receipt string }

func newSQS(ctx context.Context, cfg config) (*sqsQueues, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.SQS.Region))
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	client := sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if cfg.SQS.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.SQS.Endpoint)
		}
	})
	return &sqsQueues{cfg: cfg, client: client, urls: map[string]string{}}, nil
}

// queueURL asks SQS for the queue's URL, as the real sidecar does (no
// account id reaches the sidecar), and remembers it.
func (s *sqsQueues) queueURL(ctx context.Context, actor string) (string, error) {
	name := s.cfg.queue(actor)
	if u, ok := s.urls[name]; ok {
		return u, nil
	}
	out, err := s.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("queue URL of %s: %w", name, err)
	}
	u := onEndpoint(aws.ToString(out.QueueUrl), s.cfg.SQS.Endpoint)
	s.urls[name] = u
	return u, nil
}

// onEndpoint moves a queue URL onto the configured endpoint: an emulator
// may answer with a host name only it knows.
func onEndpoint(queueURL, endpoint string) string {
	if endpoint == "" {
		return queueURL
	}
	q, err1 := url.Parse(queueURL)
	e, err2 := url.Parse(endpoint)
	if err1 != nil || err2 != nil || e.Host == "" {
		return queueURL
	}
	q.Scheme, q.Host = e.Scheme, e.Host
	return q.String()
}

func (s *sqsQueues) receive(ctx context.Context) (*message, error) {
	u, err := s.queueURL(ctx, s.cfg.Actor)
	if err != nil {
		return nil, err
	}
	for ctx.Err() == nil {
		out, err := s.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(u), MaxNumberOfMessages: 1,
			WaitTimeSeconds: s.cfg.SQS.WaitTimeSeconds, VisibilityTimeout: s.cfg.SQS.VisibilityTimeout,
		})
		if err != nil {
			delete(s.urls, s.cfg.queue(s.cfg.Actor)) // the queue may come back elsewhere
			return nil, fmt.Errorf("receive from %s: %w", u, err)
		}
		if len(out.Messages) > 0 {
			m := out.Messages[0]
			return &message{Body: []byte(aws.ToString(m.Body)), handle: sqsHandle{u, aws.ToString(m.ReceiptHandle)}}, nil
		}
	}
	return nil, ctx.Err()
}

func (s *sqsQueues) send(ctx context.Context, actor string, body []byte) error {
	u, err := s.queueURL(ctx, actor)
	if err != nil {
		return err
	}
	if _, err = s.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String(string(body))}); err != nil {
		delete(s.urls, s.cfg.queue(actor))
	}
	return err
}

// sendDelayed sends with DelaySeconds, the delay rounded to whole
// seconds and cut to SQS's 900, as the current sidecar's SendWithDelay.
func (s *sqsQueues) sendDelayed(ctx context.Context, actor string, body []byte, delay time.Duration) error {
	u, err := s.queueURL(ctx, actor)
	if err != nil {
		return err
	}
	seconds := min(int32(delay.Round(time.Second)/time.Second), 900)
	if _, err = s.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String(string(body)),
		DelaySeconds: seconds}); err != nil {
		delete(s.urls, s.cfg.queue(actor))
	}
	return err
}

func (s *sqsQueues) ack(ctx context.Context, m *message) error {
	h := m.handle.(sqsHandle)
	_, err := s.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &h.queueURL, ReceiptHandle: &h.receipt})
	return err
}

// requeue makes the message visible again at once.
func (s *sqsQueues) requeue(ctx context.Context, m *message) error {
	h := m.handle.(sqsHandle)
	_, err := s.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: &h.queueURL, ReceiptHandle: &h.receipt, VisibilityTimeout: 0,
	})
	return err
}

// stopReceiving has nothing to do: SQS hands out messages only on receive.
func (s *sqsQueues) stopReceiving() error { return nil }

func (s *sqsQueues) close() error { return nil }
