package rabbitmq

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/finalize"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// adoptTransport is the transport name the actors of these tests name.
const adoptTransport = "rabbitmq"

// only is a transport.Lookup of one broker.
type only struct{ broker transport.Broker }

func (o only) Get(name string) (transport.Broker, bool) { return o.broker, name == adoptTransport }

// adoptActor is an actor of a namespace of the test's own: flat (spec.actor)
// or nested (its name), with the given annotations. Its queues, their
// records and its namespace's exchange are deleted at the end of the test.
func adoptActor(t *testing.T, flat bool, annotations map[string]string) *v1alpha1.AsyncActor {
	t.Helper()
	ns := testenv.ActorName("adopt")
	actor := &v1alpha1.AsyncActor{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.ActorName("a"), Namespace: ns, UID: "uid-1", Annotations: annotations},
		Spec:       v1alpha1.AsyncActorSpec{Transport: adoptTransport},
	}
	if flat {
		actor.Spec.AsyaGeneration = v1alpha1.Flat
		actor.Spec.Actor = "doubler"
	}
	q := transport.QueueOf(actor)
	t.Cleanup(func() {
		deleteQueuesAndRecords([]string{q.Name(), q.DLQName()})
		if ch, err := testenv.Rabbit(t).Channel(); err == nil {
			ch.ExchangeDelete(testExchange+"-"+ns, false, false)
			ch.Close()
		}
	})
	return actor
}

// provision makes the queue as someone else would (upstream's users:
// Crossplane creates none), with messages in it.
// args are the queue's arguments, which must be asya-sync's for it to
// adopt the queue.
func provision(t *testing.T, ctx context.Context, queue string, messages int, args amqp.Table) {
	t.Helper()
	ch := amqpChannel(t)
	defer ch.Close()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, args); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < messages; i++ {
		confirm, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{Body: []byte("job")})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := confirm.WaitContext(ctx); err != nil || !ok {
			t.Fatalf("publish to %s: not confirmed: %v", queue, err)
		}
	}
	// Queue counts lag the confirms a little.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if n, _ := queueExists(t, queue); n == messages || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// release is the finalize path, the pure decision then the broker, and
// what it says: nothing when the queue is deleted.
func release(ctx context.Context, r *Broker, actor *v1alpha1.AsyncActor) string {
	st := finalize.Release(ctx, finalize.Claim{Actor: actor, Mine: true}, only{r})
	if !st.Ready {
		return "not released: " + st.Reason + ": " + st.Message
	}
	return st.Message
}

func wantAdopted(t *testing.T, ctx context.Context, r *Broker, q transport.Queue, want bool) {
	t.Helper()
	got, err := r.Adopted(ctx, q)
	if err != nil || got != want {
		t.Fatalf("Adopted(%s) = %v, %v; want %v", q.Name(), got, err, want)
	}
}

func TestAdoptedQueueIsKeptOnDelete(t *testing.T) {
	ctx := context.Background()
	r := newBroker(t)
	actor := adoptActor(t, true, nil)
	q := transport.QueueOf(actor)
	provision(t, ctx, q.Name(), 3, nil)

	if err := r.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	wantAdopted(t, ctx, r, q, true)
	if err := r.Ensure(ctx, q); err != nil { // a second ensure reads the mark, and keeps it
		t.Fatal(err)
	}
	wantAdopted(t, ctx, r, q, true)

	msg := release(ctx, r, actor)
	if !strings.Contains(msg, "left as it is, messages and all") || !strings.Contains(msg, finalize.AnnotationQueueDeletionPolicy) {
		t.Errorf("finalize says %q; want the queue kept, and how to have it deleted", msg)
	}
	if n, ok := queueExists(t, q.Name()); !ok || n != 3 {
		t.Fatalf("after finalize (%s): queue exists %v with %d messages; want kept with 3", msg, ok, n)
	}
	if !recordExists(t, q.Name()) {
		t.Error("the owner record went with the queue kept")
	}
	t.Log(msg)

	// A later actor of the same claim finds the queue still adopted.
	if err := r.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	wantAdopted(t, ctx, r, q, true)
}

func TestAdoptedQueueDeletedWhenAsked(t *testing.T) {
	ctx := context.Background()
	r := newBroker(t, withDLQ)
	actor := adoptActor(t, true, map[string]string{finalize.AnnotationQueueDeletionPolicy: finalize.PolicyDelete})
	q := transport.QueueOf(actor)
	provision(t, ctx, q.Name(), 2, r.queueArgs(q))
	provision(t, ctx, q.DLQName(), 1, nil)
	if err := r.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	wantAdopted(t, ctx, r, q, true)
	if msg := release(ctx, r, actor); msg != "" {
		t.Fatalf("finalize: %s", msg)
	}
	for _, name := range []string{q.Name(), q.DLQName()} {
		if _, ok := queueExists(t, name); ok {
			t.Errorf("%s kept; the actor asked for it to be deleted", name)
		}
		if recordExists(t, name) {
			t.Errorf("the owner record of %s is left", name)
		}
	}
}

func TestCreatedQueueIsDeleted(t *testing.T) {
	ctx := context.Background()
	r := newBroker(t)
	actor := adoptActor(t, true, nil)
	q := transport.QueueOf(actor)
	if err := r.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	wantAdopted(t, ctx, r, q, false)
	if err := r.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	wantAdopted(t, ctx, r, q, false)
	if msg := release(ctx, r, actor); msg != "" {
		t.Fatalf("finalize: %s", msg)
	}
	if _, ok := queueExists(t, q.Name()); ok {
		t.Error("a queue asya-sync created is kept")
	}
}

// A record the previous release wrote carries no mark: its queue keeps
// the rule it had, deleted with its actor, even though it exists with
// messages when this release first ensures it.
func TestUnmarkedRecordKeepsTodaysRule(t *testing.T) {
	ctx := context.Background()
	r := newBroker(t)
	actor := adoptActor(t, true, nil)
	q := transport.QueueOf(actor)
	ch := amqpChannel(t)
	if err := declareRecord(ch, q.Name(), q.Claim(), false); err != nil { // as the previous code did
		t.Fatal(err)
	}
	ch.Close()
	provision(t, ctx, q.Name(), 2, nil)
	if err := r.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	wantAdopted(t, ctx, r, q, false)
	if msg := release(ctx, r, actor); msg != "" {
		t.Fatalf("finalize: %s", msg)
	}
	if _, ok := queueExists(t, q.Name()); ok {
		t.Error("a queue recorded by the previous release is kept")
	}
}

// A nested (0.3) actor keeps the rule the 0.3 operator had: its queue is
// deleted, adopted or not.
func TestNestedAdoptedQueueIsDeleted(t *testing.T) {
	ctx := context.Background()
	r := newBroker(t)
	actor := adoptActor(t, false, nil)
	q := transport.QueueOf(actor)
	provision(t, ctx, q.Name(), 1, nil)
	if err := r.Ensure(ctx, q); err != nil {
		t.Fatal(err)
	}
	wantAdopted(t, ctx, r, q, true)
	if msg := release(ctx, r, actor); msg != "" {
		t.Fatalf("finalize: %s", msg)
	}
	if _, ok := queueExists(t, q.Name()); ok {
		t.Error("a nested actor's queue is kept")
	}
}

// Replicas ensuring one queue at once agree on whether it was adopted:
// all say so of a queue that was there before, none of one they create.
func TestAdoptionIsDecidedOnce(t *testing.T) {
	ctx := context.Background()
	for _, existed := range []bool{true, false} {
		actor := adoptActor(t, true, nil)
		q := transport.QueueOf(actor)
		if existed {
			provision(t, ctx, q.Name(), 1, nil)
		}
		replicas := make([]*Broker, 4)
		for i := range replicas {
			replicas[i] = newBroker(t)
		}
		var wg sync.WaitGroup
		errs := make([]error, len(replicas))
		for i, r := range replicas {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = r.Ensure(ctx, q) }()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("replica %d: %v", i, err)
			}
		}
		for _, r := range replicas {
			wantAdopted(t, ctx, r, q, existed)
		}
	}
}

// An ensure that reaches the broker learns the record's mark, so that a
// sync asks no more (KnownAdopted); a Delete forgets it.
func TestEnsureLearnsAdoption(t *testing.T) {
	ctx := context.Background()
	adopted := transport.QueueOf(adoptActor(t, true, nil))
	created := transport.QueueOf(adoptActor(t, true, nil))
	provision(t, ctx, adopted.Name(), 1, nil)

	r := newBroker(t)
	for _, q := range []transport.Queue{adopted, created} {
		if r.KnownAdopted(q) {
			t.Fatalf("KnownAdopted(%s) before any ensure; want false", q.Name())
		}
		if err := r.Ensure(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if !r.KnownAdopted(adopted) || r.KnownAdopted(created) {
		t.Fatalf("after the first ensure: KnownAdopted = %v, %v; want true, false", r.KnownAdopted(adopted), r.KnownAdopted(created))
	}

	// Another replica, or this one restarted, reads the record written.
	other := newBroker(t)
	for _, q := range []transport.Queue{adopted, created} {
		if err := other.Ensure(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if !other.KnownAdopted(adopted) || other.KnownAdopted(created) {
		t.Fatalf("after another replica's ensure: KnownAdopted = %v, %v; want true, false", other.KnownAdopted(adopted), other.KnownAdopted(created))
	}

	if err := r.Delete(ctx, adopted); err != nil {
		t.Fatal(err)
	}
	if r.KnownAdopted(adopted) {
		t.Error("KnownAdopted after Delete; want false")
	}
}
