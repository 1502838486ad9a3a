//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

func sqsClient() *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(env.sqsURL),
		Credentials:  aws.AnonymousCredentials{},
	})
}

func sqsQueueExists(t *testing.T, ctx context.Context, queue string) bool {
	t.Helper()
	_, err := sqsClient().GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue), QueueOwnerAWSAccountId: aws.String("000000000000")})
	if err == nil {
		return true
	}
	if strings.Contains(err.Error(), "NonExistentQueue") || strings.Contains(err.Error(), "QueueDoesNotExist") {
		return false
	}
	t.Fatalf("GetQueueUrl %s: %v", queue, err)
	return false
}

// deleteAndFinalize deletes the actor, drives Metacontroller's finalize
// loop until the finalizer is gone and the object with it, and waits until
// garbage collection has removed its children; t fails if any of that does
// not happen.
func deleteAndFinalize(t *testing.T, ctx context.Context, ns, name string) []*pass {
	t.Helper()
	passes, err := finalizeActor(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return passes
}

// finalizeActor is deleteAndFinalize without a test: it returns the
// finalize passes, or an error if the actor is not finalized or its
// children are not collected.
func finalizeActor(ctx context.Context, ns, name string) ([]*pass, error) {
	k := env.cluster.client
	if err := k.delete(ctx, actorGVR(), ns, name); err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	a, err := k.get(ctx, actorGVR(), ns, name)
	if err != nil {
		return nil, fmt.Errorf("actor gone before finalize ran (finalizer missing?): %w", err)
	}
	if field(a, "metadata", "deletionTimestamp") == nil || !hasFinalizer(a, env.driver.finalizer()) {
		return nil, fmt.Errorf("deleted actor has no deletionTimestamp or no finalizer: %s", mustJSON(a["metadata"]))
	}
	start := time.Now()
	var passes []*pass
	for i := 0; i < 10; i++ {
		p, err := env.driver.reconcile(ctx, ns, name)
		if err != nil {
			return nil, fmt.Errorf("finalize pass %d: %w", i+1, err)
		}
		passes = append(passes, p)
		if p.Gone {
			env.timed("finalize "+ns+"/"+name, start)
			if err := waitCollected(ctx, ns, str(a, "metadata", "uid")); err != nil {
				return nil, err
			}
			return passes, nil
		}
		if p.Hook != "finalize" {
			return nil, fmt.Errorf("pass %d called %q, want finalize", i+1, p.Hook)
		}
		if p.Response.ResyncAfterSeconds > 0 && !p.Response.Finalized {
			time.Sleep(200 * time.Millisecond)
		}
	}
	a, _ = k.get(ctx, actorGVR(), ns, name)
	return nil, fmt.Errorf("not finalized after %d passes; status %s", len(passes), mustJSON(a["status"]))
}

// waitCollected waits until no object of a child resource in ns is
// controlled by, or labelled for, the parent of that UID: the finalize
// answer keeps the children, and garbage collection removes them once the
// parent is gone.
func waitCollected(ctx context.Context, ns, uid string) error {
	start := time.Now()
	var left []string
	deadline := start.Add(2 * time.Minute)
	for {
		var err error
		if left, err = childrenLeft(ctx, ns, uid); err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("children left %s after the actor was gone: %s", time.Since(start).Round(time.Second), strings.Join(left, ", "))
		}
		if env.cluster.gc.exited() {
			return fmt.Errorf("children left: %s; the garbage collector exited (%v):\n%s", strings.Join(left, ", "), env.cluster.gc.err, env.cluster.gc.tail(20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("children left: %s: %w", strings.Join(left, ", "), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// childrenLeft lists, as "Kind/name", the objects of the child resources in
// ns that the parent of that UID controls or that carry its controller-uid
// label, read from the API server.
func childrenLeft(ctx context.Context, ns, uid string) ([]string, error) {
	var left []string
	for _, r := range env.driver.kids {
		items, err := env.cluster.client.list(ctx, r, ns, "")
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", r.Resource, err)
		}
		for _, it := range items {
			if controllerUID(it) == uid || str(it, "metadata", "labels", controllerUIDLabel) == uid {
				left = append(left, r.Kind+"/"+str(it, "metadata", "name"))
			}
		}
	}
	sort.Strings(left)
	return left, nil
}

// TestFinalizeRemovesQueue deletes actors and checks that finalize removes
// the queue on the real broker and leaves the children to garbage
// collection, and that the object and then its children go.
func TestFinalizeRemovesQueue(t *testing.T) {
	ctx := ctxFor(t, 3*time.Minute)
	ns := "e2e-finalize"
	ensureNamespace(t, ctx, ns, true)

	t.Run("rabbitmq", func(t *testing.T) {
		if !env.rabbit {
			t.Skip("RabbitMQ not listening on 127.0.0.1:5672")
		}
		rabbit := testenv.Rabbit(t)
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), ns)
		mapAt(a, "metadata")["name"] = "doomed"
		mapAt(a, "spec")["transport"] = "rabbitmq"
		mapAt(a, "spec")["scaling"] = obj{"enabled": true}
		createActor(t, ctx, a)
		if !testenv.QueueExists(t, rabbit, "asya-doomed") {
			t.Fatalf("queue asya-doomed not created; status %s", mustJSON(getActor(t, ctx, ns, "doomed")["status"]))
		}
		if n := len(childrenOf(t, ctx, ns, "doomed")); n != 4 {
			t.Errorf("%d children before delete, want 4", n)
		}
		uid := str(getActor(t, ctx, ns, "doomed"), "metadata", "uid")
		passes := deleteAndFinalize(t, ctx, ns, "doomed")
		if testenv.QueueExists(t, rabbit, "asya-doomed") {
			t.Errorf("queue asya-doomed still exists after finalize")
		}
		// Finalize keeps the children: Metacontroller neither deletes nor
		// rewrites one, and garbage collection removes all four once the
		// actor is gone (deleteAndFinalize waited for it).
		for i, p := range passes {
			if len(p.Deleted) > 0 || len(p.Applied) > 0 {
				t.Errorf("finalize pass %d deleted %v and applied %v, want neither", i+1, p.Deleted, p.Applied)
			}
		}
		if left, err := childrenLeft(ctx, ns, uid); err != nil || len(left) > 0 {
			t.Errorf("children left after the actor was gone: %v %v", left, err)
		}
	})

	t.Run("retain", func(t *testing.T) {
		if !env.rabbit {
			t.Skip("RabbitMQ not listening on 127.0.0.1:5672")
		}
		rabbit := testenv.Rabbit(t)
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), ns)
		mapAt(a, "metadata")["name"] = "kept"
		mapAt(a, "metadata")["annotations"] = obj{"asya.sh/queue-deletion-policy": "Retain"}
		mapAt(a, "spec")["transport"] = "rabbitmq"
		createActor(t, ctx, a)
		deleteAndFinalize(t, ctx, ns, "kept")
		if !testenv.QueueExists(t, rabbit, "asya-kept") {
			t.Errorf("queue asya-kept deleted despite Retain")
		}
		testenv.DeleteQueue(t, rabbit, "asya-kept")
	})

	t.Run("sqs", func(t *testing.T) {
		if !env.sqs {
			t.Skip("SQS emulator not listening")
		}
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "sqs-irsa.yaml"), ns)
		mapAt(a, "metadata")["name"] = "doomed-sqs"
		a = sqsName(a)
		name := str(a, "metadata", "name")
		createActor(t, ctx, a)
		if !sqsQueueExists(t, ctx, "asya-"+name) {
			t.Fatalf("queue asya-%s not created; status %s", name, mustJSON(getActor(t, ctx, ns, name)["status"]))
		}
		deleteAndFinalize(t, ctx, ns, name)
		if sqsQueueExists(t, ctx, "asya-"+name) {
			t.Fatalf("queue asya-%s still exists after finalize", name)
		}

		// The same actor again at once: SQS refuses the queue for 60 s.
		// The status says so, asks for a resync after that, and is still a
		// fixpoint: syncing again must not rewrite it.
		a = loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "sqs-irsa.yaml"), ns)
		mapAt(a, "metadata")["name"] = name
		passes := createActor(t, ctx, a)
		last := passes[len(passes)-1].Response
		got := getActor(t, ctx, ns, name)
		if str(got, "status", "status") != "TransportError" || !strings.Contains(mustJSON(got["status"]), "QueueDeletedRecently") {
			t.Errorf("status after re-creating within 60 s: %s", mustJSON(got["status"]))
		}
		if last.ResyncAfterSeconds < 60 {
			t.Errorf("resyncAfterSeconds = %v, want the SQS wait (>= 60)", last.ResyncAfterSeconds)
		}
		deleteAndFinalize(t, ctx, ns, name)
	})

	t.Run("invalid-actor", func(t *testing.T) {
		// Never valid, never had a queue: finalized as soon as nothing is left.
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "no-runtime.yaml"), ns)
		mapAt(a, "spec")["transport"] = "switched-off"
		createActor(t, ctx, a)
		deleteAndFinalize(t, ctx, ns, "no-runtime")
	})
}
