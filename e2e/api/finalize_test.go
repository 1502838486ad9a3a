//go:build e2e

package api

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

func sqsQueueExists(t *testing.T, ctx context.Context, queue string) bool {
	t.Helper()
	_, err := testenv.SQSClient().GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue), QueueOwnerAWSAccountId: aws.String("000000000000")})
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
func deleteAndFinalize(t *testing.T, ctx context.Context, ns, name string) []*testenv.Pass {
	t.Helper()
	passes, err := testenv.FinalizeActor(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return passes
}

// TestFinalizeRemovesQueue deletes actors and checks that finalize removes
// the queue on the real broker and leaves the children to garbage
// collection, and that the object and then its children go.
func TestFinalizeRemovesQueue(t *testing.T) {
	ctx := testenv.CtxFor(t, 3*time.Minute)
	ns := "e2e-finalize"
	testenv.EnsureNamespace(t, ctx, ns, true)

	t.Run("rabbitmq", func(t *testing.T) {
		if !env.Rabbit {
			t.Skip("RabbitMQ not listening on 127.0.0.1:5672")
		}
		rabbit := testenv.Rabbit(t)
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
		testenv.MapAt(a, "metadata")["name"] = "doomed"
		testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
		testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"enabled": true}
		createActor(t, ctx, a)
		if !testenv.QueueExists(t, rabbit, "asya-doomed") {
			t.Fatalf("queue asya-doomed not created; status %s", testenv.MustJSON(testenv.GetActor(t, ctx, ns, "doomed")["status"]))
		}
		if n := len(childrenOf(t, ctx, ns, "doomed")); n != 4 {
			t.Errorf("%d children before delete, want 4", n)
		}
		uid := testenv.Str(testenv.GetActor(t, ctx, ns, "doomed"), "metadata", "uid")
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
		if left, err := testenv.ChildrenLeft(ctx, ns, uid); err != nil || len(left) > 0 {
			t.Errorf("children left after the actor was gone: %v %v", left, err)
		}
	})

	t.Run("retain", func(t *testing.T) {
		if !env.Rabbit {
			t.Skip("RabbitMQ not listening on 127.0.0.1:5672")
		}
		rabbit := testenv.Rabbit(t)
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
		testenv.MapAt(a, "metadata")["name"] = "kept"
		testenv.MapAt(a, "metadata")["annotations"] = testenv.Obj{"asya.sh/queue-deletion-policy": "Retain"}
		testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
		createActor(t, ctx, a)
		deleteAndFinalize(t, ctx, ns, "kept")
		if !testenv.QueueExists(t, rabbit, "asya-kept") {
			t.Errorf("queue asya-kept deleted despite Retain")
		}
		testenv.DeleteQueue(t, rabbit, "asya-kept")
	})

	t.Run("sqs", func(t *testing.T) {
		if !env.SQS {
			t.Skip("SQS emulator not listening")
		}
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "sqs-irsa.yaml"), ns)
		testenv.MapAt(a, "metadata")["name"] = "doomed-sqs"
		a = sqsName(a)
		name := testenv.Str(a, "metadata", "name")
		createActor(t, ctx, a)
		if !sqsQueueExists(t, ctx, "asya-"+name) {
			t.Fatalf("queue asya-%s not created; status %s", name, testenv.MustJSON(testenv.GetActor(t, ctx, ns, name)["status"]))
		}
		deleteAndFinalize(t, ctx, ns, name)
		if sqsQueueExists(t, ctx, "asya-"+name) {
			t.Fatalf("queue asya-%s still exists after finalize", name)
		}

		// The same actor again at once: SQS refuses the queue for 60 s.
		// The status says so, asks for a resync after that, and is still a
		// fixpoint: syncing again must not rewrite it.
		a = testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "sqs-irsa.yaml"), ns)
		testenv.MapAt(a, "metadata")["name"] = name
		passes := createActor(t, ctx, a)
		last := passes[len(passes)-1].Response
		got := testenv.GetActor(t, ctx, ns, name)
		if testenv.Str(got, "status", "status") != "TransportError" || !strings.Contains(testenv.MustJSON(got["status"]), "QueueDeletedRecently") {
			t.Errorf("status after re-creating within 60 s: %s", testenv.MustJSON(got["status"]))
		}
		if last.ResyncAfterSeconds < 60 {
			t.Errorf("resyncAfterSeconds = %v, want the SQS wait (>= 60)", last.ResyncAfterSeconds)
		}
		deleteAndFinalize(t, ctx, ns, name)
	})

	t.Run("invalid-actor", func(t *testing.T) {
		// Never valid, never had a queue: finalized as soon as nothing is left.
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "no-runtime.yaml"), ns)
		testenv.MapAt(a, "spec")["transport"] = "switched-off"
		createActor(t, ctx, a)
		deleteAndFinalize(t, ctx, ns, "no-runtime")
	})
}
