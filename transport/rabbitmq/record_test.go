package rabbitmq

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// collision is two flat claims of one queue name: namespace <ns>-b's actor
// doubler and namespace <ns>'s actor b-doubler both name
// asya-<ns>-b-doubler.
type collision struct {
	first, second transport.Queue
}

func newCollision(t *testing.T) collision {
	t.Helper()
	ns := testenv.ActorName("ns")
	c := collision{
		first:  transport.Queue{Namespace: ns + "-b", Actor: "doubler", Scoped: true},
		second: transport.Queue{Namespace: ns, Actor: "b-doubler", Scoped: true},
	}
	if c.first.Name() != c.second.Name() {
		t.Fatalf("%s and %s: not one queue", c.first.Name(), c.second.Name())
	}
	t.Cleanup(func() {
		conn, err := amqp.Dial(testenv.RabbitURL())
		if err != nil {
			return
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		for _, name := range []string{c.first.Name(), c.first.DLQName()} {
			ch.QueueDelete(name, false, false, false)
			ch.ExchangeDelete(OwnerRecord(name), false, false)
		}
		for _, q := range []transport.Queue{c.first, c.second} {
			ch.ExchangeDelete(testExchange+"-"+q.Namespace, false, false)
		}
	})
	return c
}

// send publishes as a sidecar of q's namespace does: to the namespace's
// exchange, which it declares, under the bare actor name. Whether the
// message reaches a queue is for the broker's bindings to say.
func send(t *testing.T, ctx context.Context, q transport.Queue, body string) {
	t.Helper()
	ch := amqpChannel(t)
	defer ch.Close()
	exchange := testExchange + "-" + q.Namespace
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirm, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, q.Actor, false, false,
		amqp.Publishing{Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := confirm.WaitContext(ctx); err != nil || !ok {
		t.Fatalf("publish to %s: not confirmed: %v", q.Namespace, err)
	}
}

func wantHeld(t *testing.T, err error, queue, holder string) {
	t.Helper()
	held, ok := transport.HeldBy(err)
	if !ok || held.Queue != queue || held.Holder != holder || transport.AsError(err).Reason != transport.ReasonQueueConflict {
		t.Fatalf("error = %v, want QueueConflict: %s held by %s", err, queue, holder)
	}
}

// The first claim to declare a queue owns it: the second is turned away
// by the broker, gets no route into it and cannot delete it; once the
// owner deletes the queue, the second claim gets a new one.
func TestRabbitMQRecordsTheFirstClaim(t *testing.T) {
	t.Parallel()
	r := newBroker(t, withDLQ)
	ctx := testenv.Context(t)
	c := newCollision(t)

	if err := r.Ensure(ctx, c.first); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and again, as every resync does
		wantHeld(t, r.Ensure(ctx, c.second), c.first.Name(), c.first.Claim())
	}
	if err := r.Ensure(ctx, c.first); err != nil {
		t.Fatalf("the owner's Ensure after the other's: %v", err)
	}

	send(t, ctx, c.first, "for the owner")
	send(t, ctx, c.second, "for the other")
	testenv.Eventually(t, 5*time.Second, "the owner's message queued", func() bool { n, _ := queueExists(t, c.first.Name()); return n >= 1 })
	time.Sleep(200 * time.Millisecond) // a misrouted message would be there by now
	if n, _ := queueExists(t, c.first.Name()); n != 1 {
		t.Fatalf("%s holds %d messages, want only the owner's", c.first.Name(), n)
	}

	wantHeld(t, r.Delete(ctx, c.second), c.first.Name(), c.first.Claim())
	if n, exists := queueExists(t, c.first.Name()); !exists || n != 1 {
		t.Fatalf("after the other's Delete: exists=%v messages=%d, want the queue and its message kept", exists, n)
	}

	if err := r.Delete(ctx, c.first); err != nil {
		t.Fatal(err)
	}
	if _, exists := queueExists(t, c.first.Name()); exists {
		t.Fatalf("%s still exists after the owner's Delete", c.first.Name())
	}
	if err := r.Ensure(ctx, c.second); err != nil {
		t.Fatalf("the other claim after the owner is gone: %v", err)
	}
	send(t, ctx, c.second, "for the new owner")
	testenv.Eventually(t, 5*time.Second, "the new owner's message queued", func() bool { n, _ := queueExists(t, c.first.Name()); return n == 1 })
}

// A queue made before owner records existed, bound under both claims'
// routes as an earlier release left it: the first claim to ensure it
// adopts it with its messages, and the other's route is removed.
func TestRabbitMQAdoptsAnUnrecordedQueueAndRemovesTheOtherRoute(t *testing.T) {
	t.Parallel()
	r := newBroker(t)
	ctx := testenv.Context(t)
	c := newCollision(t)
	ch := amqpChannel(t)
	if _, err := ch.QueueDeclare(c.first.Name(), true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []transport.Queue{c.first, c.second} {
		exchange := testExchange + "-" + q.Namespace
		if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind(q.Name(), q.Actor, exchange, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	send(t, ctx, c.second, "routed before the upgrade")
	testenv.Eventually(t, 5*time.Second, "the message queued", func() bool { n, _ := queueExists(t, c.first.Name()); return n == 1 })

	if err := r.Ensure(ctx, c.first); err != nil {
		t.Fatalf("adopting: %v", err)
	}
	wantHeld(t, r.Ensure(ctx, c.second), c.first.Name(), c.first.Claim())
	send(t, ctx, c.second, "after")
	time.Sleep(200 * time.Millisecond)
	if n, _ := queueExists(t, c.first.Name()); n != 1 {
		t.Fatalf("%s holds %d messages, want the 1 from before: the other claim's route is still bound", c.first.Name(), n)
	}
}

// A queue named like another queue's dead-letter queue (a nested actor
// named <actor>-dlq) is that queue's: the broker records DLQs too.
func TestRabbitMQRecordsDeadLetterQueues(t *testing.T) {
	t.Parallel()
	r := newBroker(t, withDLQ)
	ctx := testenv.Context(t)
	owner := transport.Queue{Actor: testenv.ActorName("dl")}
	namesake := transport.Queue{Actor: owner.Actor + "-dlq"}
	cleanupRabbitQueues(t, owner.Actor, namesake.Actor)

	if err := r.Ensure(ctx, owner); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, r.Ensure(ctx, namesake), namesake.Name(), owner.Claim())
	wantHeld(t, r.Delete(ctx, namesake), namesake.Name(), owner.Claim())
	if _, exists := queueExists(t, owner.DLQName()); !exists {
		t.Fatalf("%s, the owner's DLQ, was deleted by the namesake's Delete", owner.DLQName())
	}
}

func TestRecordedClaimReadsEveryRefusal(t *testing.T) {
	for _, tc := range []struct{ reason, want string }{
		{"PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' for exchange 'asya-sync.owner.asya-x' in vhost '/': " +
			"received 'b/y' but current is 'a/x'", "a/x"},
		{"PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' for exchange 'asya-sync.owner.asya-x' in vhost '/': " +
			"received the value 'b/y' of type 'longstr' but current is the value 'echo' of type 'longstr'", "echo"},
		{"PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'asya-sync.owner.asya-x' in vhost '/': " +
			"received 'fanout' but current is 'topic'", ""},
		{"PRECONDITION_FAILED - inequivalent arg 'alternate-exchange' for exchange 'asya-sync.owner.asya-x' in vhost '/': " +
			"received 'b/y' but current is none", ""},
	} {
		if got := recordedClaim(&amqp.Error{Code: amqp.PreconditionFailed, Reason: tc.reason}); got != tc.want {
			t.Errorf("recordedClaim(%q) = %q, want %q", tc.reason, got, tc.want)
		}
	}
	if got := recordedClaim(errors.New("not AMQP")); got != "" {
		t.Errorf("recordedClaim of another error = %q, want none", got)
	}
}

func TestRecordNameAgreesWithTheTests(t *testing.T) {
	if OwnerRecord("asya-x") != testenv.OwnerRecord("asya-x") {
		t.Errorf("OwnerRecord = %s, testenv.OwnerRecord = %s", OwnerRecord("asya-x"), testenv.OwnerRecord("asya-x"))
	}
}

// A transport that does not create its queues records none: deleting a
// queue there (the actor's deletion policy says Delete) leaves no record
// behind and needs no permission on records.
func TestRabbitMQDeleteWithoutAutoCreateRecordsNothing(t *testing.T) {
	t.Parallel()
	r := newBroker(t, withoutAutoCreate)
	ctx := testenv.Context(t)
	q := transport.Queue{Actor: testenv.ActorName("norecord")}
	cleanupRabbitQueues(t, q.Actor)
	if _, err := amqpChannel(t).QueueDeclare(q.Name(), true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, exists := queueExists(t, q.Name()); exists {
		t.Errorf("%s still exists", q.Name())
	}
	if recordExists(t, q.Name()) {
		t.Errorf("the owner record of %s exists, want none", q.Name())
	}
}

// With the DLQ off, Delete deletes a DLQ left from when it was on, with
// its record, and keeps one another claim holds (a nested actor named
// <actor>-dlq); with none, it makes no record.
func TestRabbitMQDeleteWithTheDLQOff(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	on, off := newBroker(t, withDLQ), newBroker(t)
	left := transport.Queue{Actor: testenv.ActorName("left")}
	owner := transport.Queue{Actor: testenv.ActorName("owner")}
	namesake := transport.Queue{Actor: owner.Actor + "-dlq"}
	none := transport.Queue{Actor: testenv.ActorName("none")}
	cleanupRabbitQueues(t, left.Actor, owner.Actor, namesake.Actor, none.Actor)
	for _, ensure := range []struct {
		r *Broker
		q transport.Queue
	}{{on, left}, {off, owner}, {off, namesake}, {off, none}} {
		if err := ensure.r.Ensure(ctx, ensure.q); err != nil {
			t.Fatal(err)
		}
	}
	if err := off.Delete(ctx, left); err != nil {
		t.Fatal(err)
	}
	if _, exists := queueExists(t, left.DLQName()); exists || recordExists(t, left.DLQName()) {
		t.Errorf("the DLQ left from when it was on: exists=%v, recorded=%v after Delete; want neither", exists, recordExists(t, left.DLQName()))
	}
	if err := off.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if _, exists := queueExists(t, namesake.Name()); !exists || !recordExists(t, namesake.Name()) {
		t.Errorf("%s, another claim's, was deleted or lost its record with %s's Delete", namesake.Name(), owner.Actor)
	}
	if err := off.Delete(ctx, none); err != nil {
		t.Fatal(err)
	}
	if recordExists(t, none.Name()) || recordExists(t, none.DLQName()) {
		t.Errorf("Delete with the DLQ off left a record of %s or of its DLQ", none.Name())
	}
}

// The usual delete settles in one round trip, with the DLQ on or off; a
// queue another claim holds is not deleted by it (the broker drops the
// delete after refusing the record), and a DLQ left from when it was on is
// left to the delete one step at a time.
func TestRabbitMQDeleteAtOnce(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	for _, dlq := range []bool{false, true} {
		change := func(c *Settings) { c.Queues.DLQ.Enabled = dlq }
		r := newBroker(t, change)
		c := newCollision(t)
		owned := transport.Queue{Actor: testenv.ActorName("atonce")}
		cleanupRabbitQueues(t, owned.Actor)
		for _, q := range []transport.Queue{owned, c.first} {
			if err := r.Ensure(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if !r.deleteAtOnce(ctx, owned) {
			t.Errorf("DLQ on: %v: the delete of an owned queue did not settle at once", dlq)
		}
		for _, name := range []string{owned.Name(), owned.DLQName()} {
			if _, exists := queueExists(t, name); exists || recordExists(t, name) {
				t.Errorf("DLQ on: %v: %s or its record still exists", dlq, name)
			}
		}

		send(t, ctx, c.first, "the owner's")
		testenv.Eventually(t, 5*time.Second, "the message queued", func() bool { n, _ := queueExists(t, c.first.Name()); return n == 1 })
		if r.deleteAtOnce(ctx, c.second) {
			t.Errorf("DLQ on: %v: the delete of a queue another claim holds settled at once", dlq)
		}
		if n, exists := queueExists(t, c.first.Name()); !exists || n != 1 || !recordExists(t, c.first.Name()) {
			t.Errorf("DLQ on: %v: the owner's queue after the other claim's delete: exists=%v, %d messages, recorded=%v; want it kept with its message",
				dlq, exists, n, recordExists(t, c.first.Name()))
		}
	}

	left := transport.Queue{Actor: testenv.ActorName("atonceleft")}
	cleanupRabbitQueues(t, left.Actor)
	if err := newBroker(t, withDLQ).Ensure(ctx, left); err != nil {
		t.Fatal(err)
	}
	if newBroker(t).deleteAtOnce(ctx, left) {
		t.Errorf("a delete with a DLQ left from when it was on settled at once")
	}
}
