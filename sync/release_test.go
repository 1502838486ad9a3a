package sync

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/finalize"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// These tests run finalize against the real RabbitMQ of .ci/services.sh.

func finalizeHandler(t *testing.T, port int) *Handler {
	t.Helper()
	return NewBrokerHandler(t, fmt.Sprintf(`
transports:
  mq: {type: rabbitmq, config: {host: 127.0.0.1, port: %d}}
  off: {type: rabbitmq, enabled: false, config: {host: 127.0.0.1}}
`, port))
}

func finalizeRequest(t *testing.T, name, transportName string, annotations map[string]string, children map[string]any) *hook.SyncRequest {
	t.Helper()
	parent := map[string]any{
		"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": map[string]any{"name": name, "namespace": "ml", "annotations": annotations,
			"deletionTimestamp": "2026-01-01T00:00:00Z"},
		"spec": map[string]any{"transport": transportName},
	}
	return DecodeBody(t, map[string]any{"parent": parent, "children": children, "finalizing": true})
}

func declare(t *testing.T, conn *amqp.Connection, queue string, messages int) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < messages; i++ {
		if err := ch.PublishWithContext(context.Background(), "", queue, false, false, amqp.Publishing{Body: []byte("m")}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFinalizeDeletesQueueWithMessagesAndIsIdempotent(t *testing.T) {
	conn := testenv.Rabbit(t)
	h := finalizeHandler(t, 5672)
	actor := testenv.UniqueName("fin")
	declare(t, conn, transport.QueueName(actor), 3)
	for i := 0; i < 2; i++ {
		resp, err := h.Answer(context.Background(), finalizeRequest(t, actor, "mq", nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Finalized || len(resp.Children) != 0 || resp.Status.Status != "Terminating" {
			t.Fatalf("call %d: finalized=%v children=%v status=%q, want finalized, no children, Terminating", i+1, resp.Finalized, resp.Children, resp.Status.Status)
		}
	}
	if testenv.QueueExists(t, conn, transport.QueueName(actor)) {
		t.Error("queue still exists after finalize")
	}
}

// TestFinalizeDoesNotWaitForChildren: the queue is gone, so the actor is
// finalized at once. Its children are answered as last applied, so that
// Metacontroller leaves them to garbage collection.
func TestFinalizeDoesNotWaitForChildren(t *testing.T) {
	testenv.Rabbit(t)
	h := finalizeHandler(t, 5672)
	applied := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","namespace":"ml"}}`
	child := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{
		"name": "x", "namespace": "ml", "uid": "u1", "annotations": map[string]any{AnnotationLastApplied: applied}}}
	resp, err := h.Answer(context.Background(), finalizeRequest(t, testenv.UniqueName("kids"), "mq", nil,
		map[string]any{"Deployment.apps/v1": map[string]any{"ml/x": child}}))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "x", "namespace": "ml"}}}
	if !resp.Finalized || resp.ResyncAfterSeconds != 0 || !cmp.Equal(asJSON(t, resp.Children), asJSON(t, want)) {
		t.Errorf("finalized=%v resync=%v children=%v, want finalized with no resync and the child as last applied",
			resp.Finalized, resp.ResyncAfterSeconds, resp.Children)
	}
}

func TestFinalizeRetainKeepsQueue(t *testing.T) {
	conn := testenv.Rabbit(t)
	h := finalizeHandler(t, 5672)
	actor := testenv.UniqueName("keep")
	declare(t, conn, transport.QueueName(actor), 1)
	t.Cleanup(func() { testenv.DeleteQueue(t, conn, transport.QueueName(actor)) })
	resp, err := h.Answer(context.Background(), finalizeRequest(t, actor, "mq", map[string]string{finalize.AnnotationQueueDeletionPolicy: finalize.PolicyRetain}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Finalized || !testenv.QueueExists(t, conn, transport.QueueName(actor)) {
		t.Errorf("finalized=%v queue kept=%v, want both", resp.Finalized, testenv.QueueExists(t, conn, transport.QueueName(actor)))
	}
}

func TestFinalizeWithoutQueueToDelete(t *testing.T) {
	h := finalizeHandler(t, 5672)
	for _, name := range []string{"off", "unknown"} {
		resp, err := h.Answer(context.Background(), finalizeRequest(t, testenv.UniqueName("none"), name, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Finalized {
			t.Errorf("transport %q: not finalized, want finalized at once", name)
		}
	}
}

func TestFinalizeBrokerDownThenBack(t *testing.T) {
	conn := testenv.Rabbit(t)
	// A proxy we can stop stands in for the broker going away.
	proxy := newProxy(t, "127.0.0.1:5672")
	h := finalizeHandler(t, proxy.port())
	actor := testenv.UniqueName("down")
	declare(t, conn, transport.QueueName(actor), 1)

	proxy.stop()
	resp, err := h.Answer(context.Background(), finalizeRequest(t, actor, "mq", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	cond := findCondition(resp, "TransportReady")
	if resp.Finalized || resp.ResyncAfterSeconds <= 0 || cond == nil || cond.Reason != transport.ReasonBrokerUnavailable {
		t.Fatalf("broker down: finalized=%v resync=%v condition=%+v, want not finalized, a resync and BrokerUnavailable", resp.Finalized, resp.ResyncAfterSeconds, cond)
	}
	if !testenv.QueueExists(t, conn, transport.QueueName(actor)) {
		t.Fatal("queue vanished while the broker was unreachable")
	}

	proxy.start()
	deadline := time.Now().Add(20 * time.Second)
	for !resp.Finalized && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		if resp, err = h.Answer(context.Background(), finalizeRequest(t, actor, "mq", nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if !resp.Finalized || testenv.QueueExists(t, conn, transport.QueueName(actor)) {
		t.Errorf("after the broker came back: finalized=%v, queue exists=%v", resp.Finalized, testenv.QueueExists(t, conn, transport.QueueName(actor)))
	}
}

func findCondition(resp *hook.Response, typ string) *struct{ Reason, Message string } {
	for _, c := range resp.Status.Conditions {
		if c.Type == typ {
			return &struct{ Reason, Message string }{c.Reason, c.Message}
		}
	}
	return nil
}

// proxy forwards TCP to target while started; stopping it closes the
// listener and every open connection.
type proxy struct {
	t      *testing.T
	target string
	addr   string
	ln     net.Listener
	conns  chan net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: target, addr: ln.Addr().String(), conns: make(chan net.Conn, 64)}
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *proxy) serve(ln net.Listener) {
	p.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.conns <- c
			p.conns <- up
			go pipe(c, up)
			go pipe(up, c)
		}
	}()
}

func pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

func (p *proxy) stop() {
	p.ln.Close()
	for {
		select {
		case c := <-p.conns:
			c.Close()
		default:
			return
		}
	}
}

func (p *proxy) start() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("restart proxy on %s: %v", p.addr, err)
	}
	p.serve(ln)
}
