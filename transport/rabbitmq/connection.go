package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Reconnect backoff bounds, and how long a background reconnect may take.
const (
	minReconnectDelay = 100 * time.Millisecond
	maxReconnectDelay = 30 * time.Second
	reconnectTimeout  = 30 * time.Second
)

var errTransportClosed = errors.New("transport is closed")

// amqpConnection is one long-lived AMQP connection: opened on first use,
// reopened in the background with backoff when the broker drops it. The
// library's own recovery is not used on purpose: it re-declares the queues
// this connection declared, which would bring back queues that another
// replica or an operator has deleted since. Nothing needs replaying here:
// every operation declares what it needs on a channel of this connection.
type amqpConnection struct {
	dial func(ctx context.Context) (*amqp.Connection, error)

	// dialing is held while a connection is being opened; a channel rather
	// than a mutex so that a waiting caller can give up when its ctx ends.
	dialing chan struct{}
	stop    chan struct{}
	watch   sync.WaitGroup

	mu       sync.Mutex
	conn     *amqp.Connection
	closed   bool
	failures int
	lastErr  error
	retryAt  time.Time
}

func newAMQPConnection(dial func(ctx context.Context) (*amqp.Connection, error)) *amqpConnection {
	return &amqpConnection{dial: dial, dialing: make(chan struct{}, 1), stop: make(chan struct{})}
}

// get returns the open connection, opening it if needed. While a broker is
// failing it answers with the last error until the backoff has passed, so a
// burst of syncs does not hammer a broker that is down.
func (c *amqpConnection) get(ctx context.Context) (*amqp.Connection, error) {
	if conn, err := c.current(); conn != nil || err != nil {
		return conn, err
	}
	select {
	case c.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.dialing }()
	if conn, err := c.current(); conn != nil || err != nil {
		return conn, err
	}
	if err := c.backingOff(); err != nil {
		return nil, err
	}
	return c.connect(ctx)
}

// current is the open connection, or nil; an error only once closed.
func (c *amqpConnection) current() (*amqp.Connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errTransportClosed
	}
	if c.conn != nil && !c.conn.IsClosed() {
		return c.conn, nil
	}
	return nil, nil
}

// state reports whether the connection is open; known is false before
// the first dial and once closed.
func (c *amqpConnection) state() (open, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || (c.conn == nil && c.lastErr == nil) {
		return false, false
	}
	return c.conn != nil && !c.conn.IsClosed(), true
}

func (c *amqpConnection) backingOff() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wait := time.Until(c.retryAt); c.lastErr != nil && wait > 0 {
		return fmt.Errorf("%w (next attempt in %v)", c.lastErr, wait.Round(time.Millisecond))
	}
	return nil
}

// connect dials and records the outcome; the caller holds dialing.
func (c *amqpConnection) connect(ctx context.Context) (*amqp.Connection, error) {
	conn, err := c.dial(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failures++
		c.lastErr = err
		c.retryAt = time.Now().Add(reconnectDelay(c.failures))
		return nil, err
	}
	if c.closed {
		_ = conn.Close()
		return nil, errTransportClosed
	}
	c.failures, c.lastErr, c.conn = 0, nil, conn
	closes := conn.NotifyClose(make(chan *amqp.Error, 1))
	c.watch.Add(1)
	go c.reconnectOnDrop(closes)
	return conn, nil
}

// reconnectOnDrop waits for the connection to close and, unless we closed
// it ourselves, reopens it with growing delays until it succeeds or the
// transport is closed.
func (c *amqpConnection) reconnectOnDrop(closes <-chan *amqp.Error) {
	defer c.watch.Done()
	var dropped *amqp.Error
	select {
	case dropped = <-closes:
	case <-c.stop:
		return
	}
	if dropped == nil {
		return // a clean close, by Close
	}
	for attempt := 1; ; attempt++ {
		select {
		case <-time.After(reconnectDelay(attempt)):
		case <-c.stop:
			return
		}
		if c.reconnect() {
			return
		}
	}
}

// reconnect reports whether a connection is open afterwards (or nobody
// needs one any more).
func (c *amqpConnection) reconnect() bool {
	select {
	case c.dialing <- struct{}{}:
	case <-c.stop:
		return true
	}
	defer func() { <-c.dialing }()
	if conn, err := c.current(); conn != nil || err != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), reconnectTimeout)
	defer cancel()
	_, err := c.connect(ctx)
	return err == nil
}

// Close closes the connection and stops reconnecting.
func (c *amqpConnection) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	conn := c.conn
	close(c.stop)
	c.mu.Unlock()
	var err error
	if conn != nil && !conn.IsClosed() {
		err = conn.Close()
	}
	c.watch.Wait()
	return err
}

func reconnectDelay(failures int) time.Duration {
	d := minReconnectDelay
	for i := 1; i < failures && d < maxReconnectDelay; i++ {
		d *= 2
	}
	return min(d, maxReconnectDelay)
}

// dialAMQP opens a connection whose TCP connect and handshake end with ctx.
func dialAMQP(ctx context.Context, uri string, cfg amqp.Config) (*amqp.Connection, error) {
	cfg.Dial = func(network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// amqp091 clears this deadline once the handshake is done.
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(reconnectTimeout)
		}
		if err := conn.SetDeadline(deadline); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	return amqp.DialConfig(uri, cfg)
}
