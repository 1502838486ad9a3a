package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const consumerTag = "asya-sidecar"

// rabbit consumes the actor's queue with prefetch 1 and manual acks, and
// publishes with confirms on the same channel. It connects on the first
// receive, and again on the first receive after the connection dropped;
// the broker redelivers what was in hand. What it does with a message
// follows the real sidecar 0.3 (internal/transport/rabbitmq.go at
// deliveryhero/asya 23d62b0), which the current one (the same file at
// a7cec2a) does alike but for the queue names (config.queue); where it
// departs, a comment says why that does not change what asya-sync's
// tests see.
type rabbit struct {
	cfg        config
	log        *slog.Logger
	conn       *amqp.Connection
	ch         *amqp.Channel
	deliveries <-chan amqp.Delivery
}

func newRabbit(cfg config, log *slog.Logger) *rabbit { return &rabbit{cfg: cfg, log: log} }

// where names the broker and vhost for messages, without credentials.
func (r *rabbit) where() string {
	u, err := amqp.ParseURI(r.cfg.Rabbit.URL)
	if err != nil {
		return "RabbitMQ"
	}
	return fmt.Sprintf("RabbitMQ at %s:%d vhost %q", u.Host, u.Port, u.Vhost)
}

// connect opens a channel consuming the actor's queue, which must exist
// (asya-sync creates it). The exchange is declared as the real sidecar
// declares it: durable, topic.
func (r *rabbit) connect() (err error) {
	r.close()
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.conn, err = amqp.DialConfig(r.cfg.Rabbit.URL, amqp.Config{Heartbeat: 10 * time.Second, Dial: amqp.DefaultDial(10 * time.Second),
		Properties: amqp.Table{"connection_name": "asya-sidecar/" + r.cfg.Actor}}); err != nil {
		return fmt.Errorf("connect to %s: %w", r.where(), err)
	}
	if r.ch, err = r.conn.Channel(); err != nil {
		return err
	}
	if err = errors.Join(r.ch.Qos(1, 0, false), r.ch.Confirm(false)); err != nil {
		return err
	}
	if err = r.ch.ExchangeDeclare(r.cfg.Rabbit.Exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", r.cfg.Rabbit.Exchange, err)
	}
	if r.deliveries, err = r.ch.Consume(r.cfg.queue(r.cfg.Actor), consumerTag, false, false, false, false, nil); err != nil {
		return fmt.Errorf("consume %s: %w", r.cfg.queue(r.cfg.Actor), err)
	}
	r.log.Info("consuming", "queue", r.cfg.queue(r.cfg.Actor), "exchange", r.cfg.Rabbit.Exchange, "broker", r.where())
	return nil
}

func (r *rabbit) receive(ctx context.Context) (*message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.ch == nil || r.ch.IsClosed() {
		if err := r.connect(); err != nil {
			return nil, err
		}
	}
	select {
	case d, ok := <-r.deliveries:
		if !ok {
			r.close()
			return nil, errors.New("RabbitMQ consumer closed; reconnecting")
		}
		if ctx.Err() != nil { // stopped while this one arrived: not taken
			return nil, errors.Join(ctx.Err(), d.Nack(false, true))
		}
		return &message{Body: d.Body, handle: d}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send does what the real sidecar's Send does: it checks that the
// destination queue exists (a passive declare), then publishes to the
// exchange with the bare actor name as routing key (the queue's name
// without its prefix, in both generations), not mandatory. A
// queue that exists but is not bound to the exchange under that key
// never sees the message: the broker drops it and nobody is told, in both
// sidecars. Departures: the passive declare runs on a channel of its own
// (the real sidecar's one channel is closed by the broker when the queue
// is missing, and reopened on its next receive), and the publish waits
// for the broker's confirm; neither changes where a message ends up.
func (r *rabbit) send(ctx context.Context, actor string, body []byte) error {
	if r.ch == nil || r.ch.IsClosed() {
		return errors.New("RabbitMQ channel closed")
	}
	queue := r.cfg.queue(actor)
	if err := r.queueExists(queue); err != nil {
		return err
	}
	confirm, err := r.ch.PublishWithDeferredConfirmWithContext(ctx, r.cfg.Rabbit.Exchange, r.cfg.routingKey(queue), false, false, amqp.Publishing{
		DeliveryMode: amqp.Persistent, ContentType: "application/json", Timestamp: time.Now(), Body: body})
	if err != nil {
		return err
	}
	if acked, err := confirm.WaitContext(ctx); err != nil || !acked {
		return errors.Join(err, fmt.Errorf("RabbitMQ did not confirm the message to %s", actor))
	}
	return nil
}

// sendDelayed: RabbitMQ has no delayed send without a plugin, and the
// current sidecar's RabbitMQ transport answers errDelayNotSupported, so
// a retry there ends at the sump at once.
func (r *rabbit) sendDelayed(context.Context, string, []byte, time.Duration) error {
	return errDelayNotSupported
}

// queueExists is the real sidecar's ensureQueue: a passive declare.
func (r *rabbit) queueExists(queue string) error {
	ch, err := r.conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	if _, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("queue does not exist: %w", err)
	}
	return nil
}

func (r *rabbit) ack(_ context.Context, m *message) error {
	return m.handle.(amqp.Delivery).Ack(false)
}

func (r *rabbit) requeue(_ context.Context, m *message) error {
	return m.handle.(amqp.Delivery).Nack(false, true)
}

// stopReceiving cancels the consumer: with prefetch 1 and a message in
// hand, the broker has sent nothing more.
func (r *rabbit) stopReceiving() error {
	if r.ch == nil || r.ch.IsClosed() {
		return nil
	}
	return r.ch.Cancel(consumerTag, false)
}

func (r *rabbit) close() error {
	var err error
	if r.conn != nil {
		err = r.conn.Close()
	}
	r.conn, r.ch, r.deliveries = nil, nil, nil
	return err
}
