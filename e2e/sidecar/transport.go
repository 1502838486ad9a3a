package main

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// errDelayNotSupported: the broker cannot hold a message back.
var errDelayNotSupported = errors.New("delayed send not supported by this transport")

// message is one message taken from the actor's queue.
type message struct {
	Body []byte
	// handle is the transport's own reference, for ack and requeue.
	handle any
}

// transport is the actor's queue and the queues it publishes to.
type transport interface {
	// receive blocks until a message of the actor's queue arrives or ctx
	// ends (then it returns ctx's error and no message).
	receive(ctx context.Context) (*message, error)
	// send publishes body to the queue of actor and returns once the
	// broker has it.
	send(ctx context.Context, actor string, body []byte) error
	// sendDelayed is send with the message held back for delay (whole
	// seconds, at most 15 minutes), or errDelayNotSupported. Only the
	// current generation's retries use it.
	sendDelayed(ctx context.Context, actor string, body []byte, delay time.Duration) error
	// ack removes the message from the queue.
	ack(ctx context.Context, m *message) error
	// requeue gives the message back for redelivery.
	requeue(ctx context.Context, m *message) error
	// stopReceiving makes sure no further message is handed to this
	// sidecar; called while a message is still in hand.
	stopReceiving() error
	close() error
}

func openTransport(ctx context.Context, cfg config, log *slog.Logger) (transport, error) {
	switch cfg.Transport {
	case "sqs":
		return newSQS(ctx, cfg)
	case "pubsub":
		return newPubSub(ctx, cfg)
	}
	return newRabbit(cfg, log), nil
}
