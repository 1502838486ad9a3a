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
// the broker redelivers what was in hand.
type rabbit struct {
	cfg        config
	log        *slog.Logger
	conn       *amqp.Connection
	ch         *amqp.Channel
	deliveries <-chan amqp.Delivery
	returns    chan amqp.Return
}

func newRabbit(cfg config, log *slog.Logger) *rabbit { return &rabbit{cfg: cfg, log: log} }

func (r *rabbit) url() string {
	c := r.cfg.Rabbit
	return amqp.URI{Scheme: "amqp", Host: c.Host, Port: c.Port, Username: c.Username, Password: c.Password, Vhost: "/"}.String()
}

// connect opens a channel consuming the actor's queue, which must exist
// (asya-sync creates it). A configured exchange is declared as asya-sync
// and the real sidecar declare it: durable, topic.
func (r *rabbit) connect() (err error) {
	r.close()
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.conn, err = amqp.DialConfig(r.url(), amqp.Config{Heartbeat: 10 * time.Second, Dial: amqp.DefaultDial(10 * time.Second),
		Properties: amqp.Table{"connection_name": "asya-sidecar/" + r.cfg.Actor}}); err != nil {
		return fmt.Errorf("connect to RabbitMQ at %s:%d: %w", r.cfg.Rabbit.Host, r.cfg.Rabbit.Port, err)
	}
	if r.ch, err = r.conn.Channel(); err != nil {
		return err
	}
	if err = errors.Join(r.ch.Qos(1, 0, false), r.ch.Confirm(false)); err != nil {
		return err
	}
	if ex := r.cfg.Rabbit.Exchange; ex != "" {
		if err = r.ch.ExchangeDeclare(ex, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
			return fmt.Errorf("declare exchange %s: %w", ex, err)
		}
	}
	r.returns = r.ch.NotifyReturn(make(chan amqp.Return, 1))
	if r.deliveries, err = r.ch.Consume(queueName(r.cfg.Actor), consumerTag, false, false, false, false, nil); err != nil {
		return fmt.Errorf("consume %s: %w", queueName(r.cfg.Actor), err)
	}
	r.log.Info("consuming", "queue", queueName(r.cfg.Actor), "exchange", r.cfg.Rabbit.Exchange)
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

// send publishes through the exchange with the bare actor name as routing
// key when one is configured, else through the default exchange to the
// queue itself. It is mandatory: a message no queue takes is an error.
func (r *rabbit) send(ctx context.Context, actor string, body []byte) error {
	if r.ch == nil || r.ch.IsClosed() {
		return errors.New("RabbitMQ channel closed")
	}
	exchange, key := "", queueName(actor)
	if r.cfg.Rabbit.Exchange != "" {
		exchange, key = r.cfg.Rabbit.Exchange, actor
	}
	for len(r.returns) > 0 { // left by an earlier publish
		<-r.returns
	}
	confirm, err := r.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, amqp.Publishing{
		DeliveryMode: amqp.Persistent, ContentType: "application/json", Timestamp: time.Now(), Body: body})
	if err != nil {
		return err
	}
	if acked, err := confirm.WaitContext(ctx); err != nil || !acked {
		return errors.Join(err, fmt.Errorf("RabbitMQ did not confirm the message to %s", key))
	}
	select { // a return comes before the confirm
	case ret := <-r.returns:
		return fmt.Errorf("no queue took the message (exchange %q, routing key %q): %s", ret.Exchange, ret.RoutingKey, ret.ReplyText)
	default:
		return nil
	}
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
