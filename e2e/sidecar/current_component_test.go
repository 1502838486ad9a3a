package main

// Component tests of the current generation: the test sidecar, built and
// run as a process in its current mode, and the project's current runtime
// (runtime/asya_runtime_http.py) under python3, on the real RabbitMQ, the
// SQS emulator and the Pub/Sub emulator, with the queues made as
// asya-sync makes them.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// currentRuntime is the project's runtime of the current generation.
const currentRuntime = "../../runtime/asya_runtime_http.py"

// currentHandlers is the module the current runtimes load.
const currentHandlers = `import os, time

def first(payload):
    return {"first": payload}

def second(payload):
    return {"second": payload}

def three(payload):
    for i in range(3):
        yield {"part": i, "of": payload}

def gated(payload):
    yield {"part": 0}
    deadline = time.time() + 60
    while not os.path.exists(payload["gate"]) and time.time() < deadline:
        time.sleep(0.05)
    yield {"part": 1}

def slow(payload):
    open(payload["started"], "w").close()
    time.sleep(payload["seconds"])
    return {"slept": payload["seconds"]}

def fail(payload):
    raise ValueError("refused %r" % (payload,))

def nothing(payload):
    return None

def counted(payload):
    with open(payload["calls"], "a") as f:
        f.write(".")
    raise ValueError("refused")
`

// The end actors' queues every test reads, with their default names.
const (
	sink = "x-sink"
	sump = "x-sump"
)

// within bounds every wait for a message.
const within = 30 * time.Second

// built is the sidecar binary, built once for the run.
var built struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

func sidecarBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "asya-sidecar-bin"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "asya-sidecar")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

func removeBuiltSidecar() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// sidecarProcess is the built sidecar running as a process.
type sidecarProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // how it exited, once exited is closed
	// checked: the test looked at how it exited; the cleanup does not.
	checked bool
}

// startSidecarProcess runs the built sidecar with env and none of the
// test's own ASYA_ variables. After the test it is stopped with SIGTERM
// and must exit 0, unless the test looked at its exit itself.
func startSidecarProcess(t *testing.T, env ...string) *sidecarProcess {
	t.Helper()
	cmd := exec.Command(sidecarBinary(t))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ASYA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &sidecarProcess{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop()
		select {
		case <-p.exited:
			if p.err != nil && !p.checked {
				t.Errorf("sidecar exited with %v, want 0", p.err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
			t.Error("sidecar did not exit within 20s of SIGTERM")
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("sidecar (%s) output:\n%s", strings.Join(env, " "), out.String())
		}
	})
	return p
}

// stop sends SIGTERM, unless the sidecar has exited.
func (p *sidecarProcess) stop() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// exitCode waits for the sidecar to exit by itself and returns its code.
func (p *sidecarProcess) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("sidecar still running after %v", within)
	}
	p.checked = true
	return p.cmd.ProcessState.ExitCode()
}

// currentRig is one namespace's queues on one broker, made as asya-sync
// makes them: on RabbitMQ durable queues asya-{ns}-{actor} bound to the
// namespace's exchange with the key {actor}, on SQS queues created by
// name. Each rig has a namespace of its own, and on RabbitMQ an exchange
// of its own: the routing key carries no namespace, so two namespaces
// sharing an exchange would get each other's messages for actors of the
// same name.
type currentRig struct {
	t         *testing.T
	transport string
	cfg       config // the namespace, for the queue names
	exchange  string
	conn      *amqp.Connection
	sqs       *sqsQueues
	pubsub    *pubsubQueues
}

// pubsubAckDeadline is the rig's subscriptions' ack deadline, Pub/Sub's
// least: how long an unacknowledged message takes to come back.
const pubsubAckDeadline = 10

func newCurrentRig(t *testing.T, transport string) *currentRig {
	t.Helper()
	ns := testenv.ActorName("ns")
	r := &currentRig{t: t, transport: transport, exchange: "asya-" + ns, cfg: config{
		Transport: transport, Current: &currentConfig{Namespace: ns},
		SQS:    sqsConfig{Region: "us-east-1", Endpoint: testenv.SQSEndpoint()},
		PubSub: pubsubConfig{ProjectID: testenv.PubSubProject, Endpoint: testenv.PubSubEndpoint()},
	}}
	switch transport {
	case "rabbitmq":
		testenv.NeedRabbitMQ(t)
		r.conn = testenv.Rabbit(t)
		ch, err := r.conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		if err := ch.ExchangeDeclare(r.exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if ch, err := r.conn.Channel(); err == nil {
				_ = ch.ExchangeDelete(r.exchange, false, false)
				ch.Close()
			}
		})
	case "sqs":
		testenv.NeedSQS(t)
		q, err := newSQS(context.Background(), r.cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.sqs = q
	case "pubsub":
		testenv.NeedPubSub(t)
		q, err := newPubSub(context.Background(), r.cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.close() })
		r.pubsub = q
	}
	r.queues(sink, sump)
	return r
}

// queues makes the actors' queues, deleted after the test.
func (r *currentRig) queues(actors ...string) {
	r.t.Helper()
	for _, a := range actors {
		name := r.cfg.queue(a)
		switch r.transport {
		case "rabbitmq":
			ch, err := r.conn.Channel()
			if err != nil {
				r.t.Fatal(err)
			}
			_, err = ch.QueueDeclare(name, true, false, false, false, nil)
			if err == nil {
				err = ch.QueueBind(name, a, r.exchange, false, nil)
			}
			ch.Close()
			if err != nil {
				r.t.Fatal(err)
			}
			r.t.Cleanup(func() { testenv.DeleteQueue(r.t, r.conn, name) })
		case "sqs":
			out, err := r.sqs.client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
			if err != nil {
				r.t.Fatal(err)
			}
			r.t.Cleanup(func() {
				_, _ = r.sqs.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
			})
		case "pubsub":
			ctx := context.Background()
			topic, sub := r.pubsub.topic(a), r.pubsub.subscription(a)
			if _, err := r.pubsub.topics.CreateTopic(ctx, &pb.Topic{Name: topic}); err != nil {
				r.t.Fatal(err)
			}
			if _, err := r.pubsub.subs.CreateSubscription(ctx, &pb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: pubsubAckDeadline}); err != nil {
				r.t.Fatal(err)
			}
			r.t.Cleanup(func() {
				_ = r.pubsub.subs.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: sub})
				_ = r.pubsub.topics.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: topic})
			})
		}
	}
}

// actor runs the actor: the current runtime with current_handlers.<handler>
// and the sidecar in current mode, with the env asya-sync gives it and
// env on top. The sidecar is chosen current by ASYA_NAMESPACE alone.
func (r *currentRig) actor(name, handler string, env ...string) *sidecarProcess {
	r.t.Helper()
	sockets := socketDir(r.t)
	mods := filepath.Join(filepath.Dir(sockets), "mods")
	if err := os.WriteFile(filepath.Join(mods, "current_handlers.py"), []byte(currentHandlers), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if err := os.MkdirAll(sockets, 0o755); err != nil { // the pod's emptyDir
		r.t.Fatal(err)
	}
	if _, err := os.Stat(currentRuntime); err != nil {
		r.t.Fatalf("the current runtime: %v", err)
	}
	startScript(r.t, currentRuntime, sockets, "current_handlers."+handler)
	env = append([]string{
		"ASYA_LOG_LEVEL=debug", "ASYA_ACTOR_NAME=" + name, "ASYA_NAMESPACE=" + r.cfg.Current.Namespace,
		"ASYA_SOCKET_DIR=" + sockets, "ASYA_TRANSPORT=" + r.transport,
		"ASYA_ACTOR_SINK=" + sink, "ASYA_ACTOR_SUMP=" + sump, "ASYA_RESILIENCY_ACTOR_TIMEOUT=30s",
	}, env...) // later ones win
	switch r.transport {
	case "rabbitmq":
		env = append(env, "ASYA_RABBITMQ_URL="+testenv.RabbitURL(), "ASYA_RABBITMQ_EXCHANGE="+r.exchange)
	case "sqs":
		env = append(env, "ASYA_AWS_REGION=us-east-1", "ASYA_SQS_ENDPOINT="+testenv.SQSEndpoint(), "ASYA_SQS_WAIT_TIME_SECONDS=1")
	case "pubsub":
		env = append(env, "ASYA_PUBSUB_PROJECT_ID="+testenv.PubSubProject, "ASYA_PUBSUB_ENDPOINT="+testenv.PubSubEndpoint())
	}
	return startSidecarProcess(r.t, env...)
}

// put puts an envelope on the actor's queue.
func (r *currentRig) put(actor string, env map[string]any) {
	r.t.Helper()
	body := mustJSON(env)
	switch r.transport {
	case "rabbitmq":
		testenv.PublishBody(r.t, r.conn, r.cfg.queue(actor), body)
	case "sqs":
		if err := r.sqs.send(context.Background(), actor, body); err != nil {
			r.t.Fatal(err)
		}
	case "pubsub":
		if err := r.pubsub.send(context.Background(), actor, body); err != nil {
			r.t.Fatal(err)
		}
	}
}

// take waits for a message on the actor's queue, removes it, and
// returns it decoded.
func (r *currentRig) take(actor string) map[string]any {
	r.t.Helper()
	var body []byte
	testenv.Eventually(r.t, within, "a message on "+r.cfg.queue(actor), func() bool {
		body = r.get(actor)
		return body != nil
	})
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		r.t.Fatalf("message on %s: %v: %s", r.cfg.queue(actor), err, body)
	}
	return m
}

// get removes and returns a message of the actor's queue, or nil.
func (r *currentRig) get(actor string) []byte {
	r.t.Helper()
	switch r.transport {
	case "rabbitmq":
		ch, err := r.conn.Channel()
		if err != nil {
			r.t.Fatal(err)
		}
		defer ch.Close()
		d, ok, err := ch.Get(r.cfg.queue(actor), true)
		if err != nil {
			r.t.Fatal(err)
		}
		if ok {
			return d.Body
		}
	case "sqs":
		ctx := context.Background()
		u, err := r.sqs.queueURL(ctx, actor)
		if err != nil {
			r.t.Fatal(err)
		}
		out, err := r.sqs.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, MaxNumberOfMessages: 1})
		if err != nil {
			r.t.Fatal(err)
		}
		if len(out.Messages) > 0 {
			m := out.Messages[0]
			if _, err := r.sqs.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &u, ReceiptHandle: m.ReceiptHandle}); err != nil {
				r.t.Fatal(err)
			}
			return []byte(aws.ToString(m.Body))
		}
	case "pubsub":
		ms := r.pullPubSub(actor, 1)
		if len(ms) > 0 {
			if err := r.pubsub.ack(context.Background(), ms[0]); err != nil {
				r.t.Fatal(err)
			}
			return ms[0].Body
		}
	}
	return nil
}

// pullPubSub pulls up to max messages of the actor's subscription
// without waiting, and leaves them unacknowledged.
func (r *currentRig) pullPubSub(actor string, max int32) []*message {
	r.t.Helper()
	sub := r.pubsub.subscription(actor)
	resp, err := r.pubsub.subs.Pull(context.Background(), &pb.PullRequest{Subscription: sub, MaxMessages: max, ReturnImmediately: true}) //nolint:staticcheck // the emulator honours it
	if err != nil {
		r.t.Fatal(err)
	}
	var out []*message
	for _, m := range resp.ReceivedMessages {
		out = append(out, &message{Body: m.Message.Data, handle: pubsubHandle{sub, m.AckId}})
	}
	return out
}

// count is the number of messages on the actor's queue, in flight too.
func (r *currentRig) count(actor string) int {
	r.t.Helper()
	switch r.transport {
	case "rabbitmq":
		return testenv.Messages(r.t, r.conn, r.cfg.queue(actor))
	case "pubsub":
		// Pub/Sub counts nothing: what can be pulled now, given back at
		// once (a message in another's hands is not seen).
		ms := r.pullPubSub(actor, 100)
		for _, m := range ms {
			if err := r.pubsub.requeue(context.Background(), m); err != nil {
				r.t.Fatal(err)
			}
		}
		return len(ms)
	}
	ctx := context.Background()
	u, err := r.sqs.queueURL(ctx, actor)
	if err != nil {
		r.t.Fatal(err)
	}
	out, err := r.sqs.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &u, AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// empty fails the test when the actor's queue holds a message.
func (r *currentRig) empty(actors ...string) {
	r.t.Helper()
	for _, a := range actors {
		if n := r.count(a); n != 0 {
			r.t.Errorf("%s holds %d messages, want none", r.cfg.queue(a), n)
		}
	}
}

// onBrokers runs the test on RabbitMQ, on SQS and on Pub/Sub, in
// parallel.
func onBrokers(t *testing.T, test func(t *testing.T, r *currentRig)) {
	for _, transport := range []string{"rabbitmq", "sqs", "pubsub"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			test(t, newCurrentRig(t, transport))
		})
	}
}

// newEnvelope is a new envelope at the first actor of the route.
func newEnvelope(id string, payload any, actors ...string) map[string]any {
	return map[string]any{
		"id": id, "route": map[string]any{"prev": []string{}, "curr": actors[0], "next": actors[1:]},
		"headers": map[string]any{"trace": id}, "payload": payload,
	}
}

// field is m's value at the path of keys.
func field(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		o, _ := v.(map[string]any)
		v = o[k]
	}
	return v
}

func routeOf(prev []any, curr string, next []any) map[string]any {
	return map[string]any{"prev": prev, "curr": curr, "next": next}
}

// TestCurrentPipelineReachesSink: a message goes through two actors,
// each sidecar routing the runtime's frame to the next, and reaches the
// namespace's sink as succeeded.
func TestCurrentPipelineReachesSink(t *testing.T) {
	t.Parallel()
	onBrokers(t, func(t *testing.T, r *currentRig) {
		r.queues("first", "second")
		r.actor("first", "first")
		r.actor("second", "second")
		r.put("first", newEnvelope("p1", map[string]any{"n": 1}, "first", "second"))

		got := r.take(sink)
		want := map[string]any{
			"id": "p1", "route": routeOf([]any{"first", "second"}, "", []any{}), "headers": map[string]any{"trace": "p1"},
			"payload": map[string]any{"second": map[string]any{"first": map[string]any{"n": 1.0}}},
		}
		status, _ := got["status"].(map[string]any)
		delete(got, "status")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("sink got (-want +got):\n%s", diff)
		}
		if status["phase"] != "succeeded" || status["reason"] != "Completed" || status["actor"] != "second" {
			t.Errorf("sink status %v, want succeeded, Completed, by second", status)
		}
		r.empty(sump, "first", "second")
	})
}

// TestCurrentGeneratorFansOut: a generator's three yields become three
// messages on the next actor's queue: the first with the envelope's id,
// the others with new ids and the envelope's as parent_id.
func TestCurrentGeneratorFansOut(t *testing.T) {
	t.Parallel()
	onBrokers(t, func(t *testing.T, r *currentRig) {
		r.queues("split", "after")
		r.actor("split", "three")
		r.put("split", newEnvelope("g1", "x", "split", "after"))

		var got []map[string]any
		for range 3 {
			got = append(got, r.take("after"))
		}
		sort.Slice(got, func(i, j int) bool {
			return field(got[i], "payload", "part").(float64) < field(got[j], "payload", "part").(float64)
		})
		ids := map[any]bool{}
		for i, m := range got {
			ids[m["id"]] = true
			if diff := cmp.Diff(map[string]any{"part": float64(i), "of": "x"}, m["payload"]); diff != "" {
				t.Errorf("message %d payload (-want +got):\n%s", i, diff)
			}
			if diff := cmp.Diff(routeOf([]any{"split"}, "after", []any{}), m["route"]); diff != "" {
				t.Errorf("message %d route (-want +got):\n%s", i, diff)
			}
			if field(m, "status", "phase") != "pending" || field(m, "status", "actor") != "after" {
				t.Errorf("message %d status %v, want pending for after", i, m["status"])
			}
			switch id, _ := m["id"].(string); {
			case i == 0 && (id != "g1" || m["parent_id"] != nil):
				t.Errorf("first message id %q parent %v, want g1 and none", id, m["parent_id"])
			case i > 0 && (!uuidRE.MatchString(id) || m["parent_id"] != "g1"):
				t.Errorf("message %d id %q parent %v, want a new UUID and g1", i, id, m["parent_id"])
			}
		}
		if len(ids) != 3 {
			t.Errorf("ids %v are not distinct", ids)
		}
		r.empty("after", sink, sump)
	})
}

// TestCurrentStreamRoutedAsItArrives: the sidecar sends a generator's
// first frame on while the handler is still running, before its next
// yield.
func TestCurrentStreamRoutedAsItArrives(t *testing.T) {
	t.Parallel()
	onBrokers(t, func(t *testing.T, r *currentRig) {
		r.queues("gate", "after")
		r.actor("gate", "gated")
		gate := filepath.Join(t.TempDir(), "open")
		r.put("gate", newEnvelope("s1", map[string]any{"gate": gate}, "gate", "after"))

		if m := r.take("after"); field(m, "payload", "part") != 0.0 {
			t.Fatalf("first message %v, want part 0", m)
		}
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if m := r.take("after"); field(m, "payload", "part") != 1.0 || m["parent_id"] != "s1" {
			t.Errorf("second message %v, want part 1 of s1", m)
		}
	})
}

// TestCurrentHandlerErrorReachesSump: a handler's exception reaches the
// namespace's sump with its type and traceback, and the message as it
// came.
func TestCurrentHandlerErrorReachesSump(t *testing.T) {
	t.Parallel()
	onBrokers(t, func(t *testing.T, r *currentRig) {
		r.queues("bad", "after")
		r.actor("bad", "fail")
		r.put("bad", newEnvelope("e1", map[string]any{"n": 7}, "bad", "after"))

		got := r.take(sump)
		if got["id"] != "e1" || field(got, "payload", "error") != "processing_error" {
			t.Errorf("sump got %v, want e1's processing_error", got)
		}
		if diff := cmp.Diff(routeOf([]any{}, "bad", []any{"after"}), got["route"]); diff != "" {
			t.Errorf("route (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"n": 7.0}, field(got, "payload", "original_payload")); diff != "" {
			t.Errorf("original payload (-want +got):\n%s", diff)
		}
		typ, _ := field(got, "payload", "details", "type").(string)
		msg, _ := field(got, "payload", "details", "message").(string)
		tb, _ := field(got, "payload", "details", "traceback").(string)
		if !strings.HasSuffix(typ, "ValueError") || !strings.Contains(msg, "refused") ||
			!strings.Contains(tb, "Traceback (most recent call last)") || !strings.Contains(tb, "in fail") {
			t.Errorf("details %v, want the ValueError and its traceback", field(got, "payload", "details"))
		}
		if field(got, "status", "phase") != "failed" || field(got, "status", "reason") != "RuntimeError" ||
			field(got, "status", "error", "traceback") != tb {
			t.Errorf("status %v, want failed, RuntimeError, with the traceback", got["status"])
		}
		r.empty("bad", "after", sink)
	})
}

// TestCurrentNoneReachesSink: a handler that returns None ends the
// route: the envelope goes to the sink as it came, succeeded.
func TestCurrentNoneReachesSink(t *testing.T) {
	t.Parallel()
	onBrokers(t, func(t *testing.T, r *currentRig) {
		r.queues("quiet", "after")
		r.actor("quiet", "nothing")
		r.put("quiet", newEnvelope("n1", []any{1, "two"}, "quiet", "after"))

		got := r.take(sink)
		status, _ := got["status"].(map[string]any)
		delete(got, "status")
		want := newEnvelope("n1", []any{1.0, "two"}, "quiet", "after")
		want["route"] = routeOf([]any{}, "quiet", []any{"after"})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("sink got (-want +got):\n%s", diff)
		}
		if status["phase"] != "succeeded" || status["reason"] != "Completed" || status["actor"] != "quiet" {
			t.Errorf("sink status %v, want succeeded, Completed, by quiet", status)
		}
		r.empty("quiet", "after", sump)
	})
}

// TestCurrentRuntimeTimeoutExits: a call over ASYA_RESILIENCY_ACTOR_TIMEOUT
// sends the message to the sump, and the sidecar exits 1 without
// acknowledging it, as the real one does: the message comes back.
func TestCurrentRuntimeTimeoutExits(t *testing.T) {
	t.Parallel()
	onBrokers(t, func(t *testing.T, r *currentRig) {
		r.queues("sleepy")
		p := r.actor("sleepy", "slow", "ASYA_RESILIENCY_ACTOR_TIMEOUT=1s")
		started := filepath.Join(t.TempDir(), "started")
		r.put("sleepy", newEnvelope("t1", map[string]any{"started": started, "seconds": 5}, "sleepy"))

		got := r.take(sump)
		if got["id"] != "t1" || field(got, "payload", "error") != "Runtime timeout exceeded after 1s" ||
			field(got, "payload", "original_payload", "seconds") != 5.0 {
			t.Errorf("sump got %v, want t1's timeout", got)
		}
		if code := p.exitCode(t, within); code != 1 {
			t.Errorf("sidecar exited %d, want 1", code)
		}
		// RabbitMQ requeues it with the connection gone, SQS once its
		// visibility timeout (twice the actor timeout) is over, Pub/Sub
		// once its ack deadline is.
		if back := r.take("sleepy"); back["id"] != "t1" {
			t.Errorf("back on the queue: %v, want t1", back)
		}
		r.empty(sink)
	})
}

// TestCurrentSIGTERMCutsTheCallShort: unlike the 0.3 mode, SIGTERM does
// not let the message in hand finish, as in the real sidecar, which
// cancels the call with the context SIGTERM ends. On RabbitMQ the message
// then goes to the sump and is acknowledged; on SQS and Pub/Sub every
// send of the sidecar fails from then on, so the message comes back: on
// SQS after its visibility timeout, on Pub/Sub at once, since the Nack
// runs on a context of its own. The sidecar exits 0 either way.
func TestCurrentSIGTERMCutsTheCallShort(t *testing.T) {
	t.Parallel()
	onBrokers(t, func(t *testing.T, r *currentRig) {
		r.queues("busy", "after")
		p := r.actor("busy", "slow", "ASYA_SQS_VISIBILITY_TIMEOUT=3")
		started := filepath.Join(t.TempDir(), "started")
		r.put("busy", newEnvelope("k1", map[string]any{"started": started, "seconds": 3}, "busy", "after"))
		testenv.Eventually(t, within, "the handler running", func() bool {
			_, err := os.Stat(started)
			return err == nil
		})
		p.stop()
		if code := p.exitCode(t, within); code != 0 {
			t.Errorf("sidecar exited %d after SIGTERM, want 0", code)
		}
		switch r.transport {
		case "rabbitmq":
			got := r.take(sump)
			if msg, _ := field(got, "payload", "error").(string); got["id"] != "k1" || !strings.Contains(msg, "context canceled") {
				t.Errorf("sump got %v, want k1 with the cancelled call", got)
			}
			r.empty("busy")
		case "sqs", "pubsub":
			if back := r.take("busy"); back["id"] != "k1" {
				t.Errorf("back on the queue: %v, want k1", back)
			}
			r.empty(sump)
		}
		r.empty("after", sink)
	})
}

// TestCurrentRetries: on either line, with the variables asya-sync
// renders for two attempts a second apart, a failed message is tried
// again on SQS, held back by DelaySeconds, and ends once its attempts
// are spent: in the sump on the 0.5 line, in the sink (phase failed) on
// the 1.x line. On RabbitMQ and Pub/Sub neither real sidecar can delay a
// message, so the first error ends there.
func TestCurrentRetries(t *testing.T) {
	t.Parallel()
	for _, line := range []struct {
		name, end, spent string
		env              []string
	}{
		{"0.5", sump, "MaxRetriesExhausted", []string{"ASYA_RESILIENCY_RETRY_POLICY=constant", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS=2",
			"ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL=1s", "ASYA_RESILIENCY_RETRY_JITTER=false"}},
		{"1.x", sink, "PolicyExhausted", []string{"ASYA_TEST_SIDECAR_LINE=1.x",
			`ASYA_RESILIENCY_POLICIES={"default":{"backoff":"constant","initialDelay":"1s","maxAttempts":2}}`}},
	} {
		t.Run(line.name, func(t *testing.T) {
			t.Parallel()
			onBrokers(t, func(t *testing.T, r *currentRig) {
				r.queues("flaky")
				r.actor("flaky", "counted", line.env...)
				calls := filepath.Join(t.TempDir(), "calls")
				r.put("flaky", newEnvelope("r1", map[string]any{"calls": calls}, "flaky"))

				got := r.take(line.end)
				wantReason, wantCalls := line.spent, 2
				if r.transport != "sqs" { // no delayed send
					wantReason, wantCalls = "RuntimeError", 1
				}
				if got["id"] != "r1" || field(got, "status", "phase") != "failed" || field(got, "status", "reason") != wantReason ||
					field(got, "status", "attempt") != 2.0 || field(got, "status", "max_attempts") != 2.0 {
					t.Errorf("%s got %v, want r1 failed, %s at attempt 2 of 2", line.end, got, wantReason)
				}
				if b, _ := os.ReadFile(calls); len(b) != wantCalls {
					t.Errorf("the handler ran %d times, want %d", len(b), wantCalls)
				}
				r.empty("flaky", sink, sump)
			})
		})
	}
}
