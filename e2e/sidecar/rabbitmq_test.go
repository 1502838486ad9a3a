package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// rabbitQueues declares the queues of the actors and binds them to the
// exchange with the bare actor name, as asya-sync does, and deletes them
// and the exchange after the test.
func rabbitQueues(t *testing.T, conn *amqp.Connection, exchange string, actors ...string) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_ = ch.ExchangeDelete(exchange, false, false)
			ch.Close()
		}
	})
	for _, a := range actors {
		if _, err := ch.QueueDeclare(queueName(a), true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { testenv.DeleteQueue(t, conn, queueName(a)) })
		if err := ch.QueueBind(queueName(a), a, exchange, false, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// publish puts body on the actor's queue and waits for the confirm.
func publish(t *testing.T, conn *amqp.Connection, actor string, body []byte) {
	t.Helper()
	testenv.PublishBody(t, conn, queueName(actor), body)
}

// takeMessage waits for a message on the actor's queue and removes it.
func takeMessage(t *testing.T, conn *amqp.Connection, actor string, within time.Duration) []byte {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var body []byte
	testenv.Eventually(t, within, "a message on "+queueName(actor), func() bool {
		d, ok, err := ch.Get(queueName(actor), true)
		if err != nil {
			t.Fatal(err)
		}
		body = d.Body
		return ok
	})
	return body
}

func rabbitSetup(t *testing.T) (*amqp.Connection, config) {
	t.Helper()
	testenv.NeedRabbitMQ(t)
	conn := testenv.Rabbit(t)
	cfg := testConfig("rabbitmq", socketDir(t))
	rabbitQueues(t, conn, cfg.Rabbit.Exchange, cfg.Actor, cfg.HappyEnd, cfg.ErrorEnd)
	return conn, cfg
}

func TestRabbitResultToHappyEnd(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	publish(t, conn, cfg.Actor, envelopeOf("m1", map[string]any{"n": 1}, 0, cfg.Actor))
	// The sidecar starts first and waits for the runtime.
	startSidecar(t, cfg)
	time.Sleep(300 * time.Millisecond)
	startRuntime(t, cfg.SocketDir, "echo")

	got := decode(t, takeMessage(t, conn, cfg.HappyEnd, 15*time.Second))
	if got.ID != "m1" || got.Route.Current != 1 || got.Payload["echo"].(map[string]any)["n"] != 1.0 {
		t.Errorf("happy-end got %+v", got)
	}
}

func TestRabbitHandlerErrorToErrorEnd(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	startRuntime(t, cfg.SocketDir, "fail")
	startSidecar(t, cfg)
	publish(t, conn, cfg.Actor, envelopeOf("m2", map[string]any{"n": 2}, 0, cfg.Actor))

	got := decode(t, takeMessage(t, conn, cfg.ErrorEnd, 15*time.Second))
	details, _ := got.Payload["details"].(map[string]any)
	if got.ID != "m2" || got.Route.Current != 0 || got.Payload["error"] != "processing_error" ||
		details["type"] != "ValueError" || got.Payload["original_payload"].(map[string]any)["n"] != 2.0 {
		t.Errorf("error-end got %+v", got)
	}
}

func TestRabbitRouteToNextActor(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	next := testenv.ActorName("next")
	rabbitQueues(t, conn, cfg.Rabbit.Exchange, next)
	startRuntime(t, cfg.SocketDir, "echo")
	startSidecar(t, cfg)
	publish(t, conn, cfg.Actor, envelopeOf("m3", "hi", 0, cfg.Actor, next))

	got := decode(t, takeMessage(t, conn, next, 15*time.Second))
	if got.ID != "m3" || got.Route.Current != 1 || got.Payload["echo"] != "hi" {
		t.Errorf("%s got %+v", next, got)
	}
}

func TestRabbitInvalidMessagesToErrorEnd(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	startRuntime(t, cfg.SocketDir, "echo")
	startSidecar(t, cfg)
	for _, tc := range []struct{ body, error string }{
		{"not json", "Failed to parse message"},
		{"", "Failed to parse message"},
		{`{"route": {"actors": ["x"]}, "payload": 1}`, "Envelope missing required 'id' field"},
		{string(envelopeOf("m4", 1, 0, "someone-else")), "Route mismatch"},
	} {
		publish(t, conn, cfg.Actor, []byte(tc.body))
		got := decode(t, takeMessage(t, conn, cfg.ErrorEnd, 15*time.Second))
		if msg, _ := got.Payload["error"].(string); !strings.HasPrefix(msg, tc.error) {
			t.Errorf("%q: error-end got %+v, want error %q", tc.body, got, tc.error)
		}
	}
}

func TestRabbitEmptyResultEndsAtHappyEnd(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	startRuntime(t, cfg.SocketDir, "nothing")
	startSidecar(t, cfg)
	publish(t, conn, cfg.Actor, envelopeOf("m5", map[string]any{"n": 1}, 0, cfg.Actor))
	got := decode(t, takeMessage(t, conn, cfg.HappyEnd, 15*time.Second))
	if got.ID != "m5" || got.Route.Current != 0 {
		t.Errorf("happy-end got %+v, want envelope m5 as it was sent", got)
	}
	if n := testenv.Messages(t, conn, queueName(cfg.ErrorEnd)); n != 0 {
		t.Errorf("%s holds %d messages, want 0", queueName(cfg.ErrorEnd), n)
	}
}

func TestRabbitEndActorConsumes(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	cfg.Actor, cfg.IsEndActor = cfg.HappyEnd, true
	startRuntime(t, cfg.SocketDir, "echo", "ASYA_HANDLER_MODE=envelope", "ASYA_ENABLE_VALIDATION=false")
	r := startSidecar(t, cfg)
	publish(t, conn, cfg.Actor, envelopeOf("m6", 1, 1, "done-actor"))
	// An empty queue is not enough: a delivered message not yet acked
	// goes back to it when the sidecar stops.
	testenv.Eventually(t, 10*time.Second, "the message consumed", func() bool { return r.logged("id=m6 outcome=consumed") })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{cfg.HappyEnd, cfg.ErrorEnd} {
		if n := testenv.Messages(t, conn, queueName(a)); n != 0 {
			t.Errorf("%s holds %d messages, want 0", queueName(a), n)
		}
	}
}

func TestRabbitRuntimeTimeoutStopsSidecar(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	cfg.RuntimeTimeout = time.Second
	startRuntime(t, cfg.SocketDir, "slow")
	r := startSidecar(t, cfg)
	publish(t, conn, cfg.Actor, envelopeOf("m7", map[string]any{"seconds": 3}, 0, cfg.Actor))

	got := decode(t, takeMessage(t, conn, cfg.ErrorEnd, 15*time.Second))
	if msg, _ := got.Payload["error"].(string); got.ID != "m7" || !strings.Contains(msg, "timeout exceeded after 1s") {
		t.Errorf("error-end got %+v", got)
	}
	if err := r.wait(10 * time.Second); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("run returned %v, want the runtime timeout", err)
	}
}

func TestRabbitRuntimeGoneRequeues(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	stopRuntime := startRuntime(t, cfg.SocketDir, "echo")
	startSidecar(t, cfg)
	publish(t, conn, cfg.Actor, envelopeOf("m8", 1, 0, cfg.Actor))
	takeMessage(t, conn, cfg.HappyEnd, 15*time.Second)

	stopRuntime()
	publish(t, conn, cfg.Actor, envelopeOf("m9", 2, 0, cfg.Actor))
	time.Sleep(time.Second) // the sidecar takes m9, finds no runtime and puts it back
	if n := testenv.Messages(t, conn, queueName(cfg.ErrorEnd)); n != 0 {
		t.Fatalf("error-end holds %d messages while the runtime is away, want 0", n)
	}
	startRuntime(t, cfg.SocketDir, "echo")
	if got := decode(t, takeMessage(t, conn, cfg.HappyEnd, 15*time.Second)); got.ID != "m9" {
		t.Errorf("happy-end got %+v, want m9", got)
	}
}

func TestRabbitReconnects(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	conn, cfg := rabbitSetup(t)
	startRuntime(t, cfg.SocketDir, "echo")
	startSidecar(t, cfg)
	publish(t, conn, cfg.Actor, envelopeOf("m10", 1, 0, cfg.Actor))
	takeMessage(t, conn, cfg.HappyEnd, 15*time.Second)

	testenv.CloseBrokerConnections(t, "asya-sidecar/"+cfg.Actor, 10*time.Second)
	publish(t, conn, cfg.Actor, envelopeOf("m11", 2, 0, cfg.Actor))
	if got := decode(t, takeMessage(t, conn, cfg.HappyEnd, 20*time.Second)); got.ID != "m11" {
		t.Errorf("happy-end got %+v, want m11", got)
	}
}

// TestRabbitSendToMissingQueueFails: as the real sidecar, a send to a
// queue that does not exist is an error, and the channel stays usable.
func TestRabbitSendToMissingQueueFails(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	r := newRabbit(cfg, testLogger(t))
	if err := r.connect(); err != nil {
		t.Fatal(err)
	}
	defer r.close()
	err := r.send(context.Background(), testenv.ActorName("nobody"), []byte("{}"))
	if err == nil || !strings.Contains(err.Error(), "queue does not exist") {
		t.Errorf("send to a missing queue: %v, want an error", err)
	}
	if err := r.send(context.Background(), cfg.HappyEnd, []byte("{}")); err != nil {
		t.Errorf("send after a missing queue: %v", err)
	}
	takeMessage(t, conn, cfg.HappyEnd, 5*time.Second)
}

// TestRabbitUnboundQueueLosesTheMessage: a queue that exists but is not
// bound to the sidecar's exchange under the actor's name never gets the
// message, and the send reports success. So the real sidecar loses it,
// and asya-sync must bind every queue where the sidecar publishes.
func TestRabbitUnboundQueueLosesTheMessage(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	unbound := testenv.ActorName("unbound")
	rabbitQueues(t, conn, "asya-test-elsewhere-"+unbound, unbound)
	r := newRabbit(cfg, testLogger(t))
	if err := r.connect(); err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if err := r.send(context.Background(), unbound, []byte("{}")); err != nil {
		t.Fatalf("send: %v, want the silent success of the real sidecar", err)
	}
	if n := testenv.Messages(t, conn, queueName(unbound)); n != 0 {
		t.Errorf("%s holds %d messages; the broker should have dropped it", queueName(unbound), n)
	}
}

// TestRabbitSIGTERM runs the built binary: SIGTERM during a slow message
// finishes and routes it, exits 0, and leaves the next message queued.
func TestRabbitSIGTERM(t *testing.T) {
	t.Parallel()
	conn, cfg := rabbitSetup(t)
	bin := filepath.Join(t.TempDir(), "asya-sidecar")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	startRuntime(t, cfg.SocketDir, "slow")
	publish(t, conn, cfg.Actor, envelopeOf("first", map[string]any{"seconds": 2}, 0, cfg.Actor))
	publish(t, conn, cfg.Actor, envelopeOf("second", map[string]any{"seconds": 0}, 0, cfg.Actor))

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), sidecarEnv(cfg)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("sidecar output:\n%s", out.String())
		}
	}()
	testenv.Eventually(t, 10*time.Second, "the first message taken", func() bool { return testenv.Messages(t, conn, queueName(cfg.Actor)) == 1 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("sidecar exited with %v, want 0", err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("sidecar did not exit within 20s of SIGTERM")
	}
	if got := decode(t, takeMessage(t, conn, cfg.HappyEnd, 5*time.Second)); got.ID != "first" {
		t.Errorf("happy-end got %+v, want the first message", got)
	}
	if n := testenv.Messages(t, conn, queueName(cfg.HappyEnd)); n != 0 {
		t.Errorf("happy-end holds %d more messages, want 0", n)
	}
	if n := testenv.Messages(t, conn, queueName(cfg.Actor)); n != 1 {
		t.Errorf("%s holds %d messages after exit, want the second", queueName(cfg.Actor), n)
	}
}

// sidecarEnv is the environment asya-sync would give a sidecar of cfg.
func sidecarEnv(cfg config) []string {
	return []string{
		"ASYA_LOG_LEVEL=debug", "ASYA_ACTOR_NAME=" + cfg.Actor,
		"ASYA_ACTOR_HAPPY_END=" + cfg.HappyEnd, "ASYA_ACTOR_ERROR_END=" + cfg.ErrorEnd,
		"ASYA_RUNTIME_TIMEOUT=" + cfg.RuntimeTimeout.String(), "ASYA_SOCKET_DIR=" + cfg.SocketDir,
		"ASYA_TRANSPORT=" + cfg.Transport, "ASYA_RABBITMQ_URL=" + cfg.Rabbit.URL,
		"ASYA_RABBITMQ_EXCHANGE=" + cfg.Rabbit.Exchange,
	}
}
