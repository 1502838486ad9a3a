//go:build e2e

package api

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestStuckActorRelease follows docs/uninstall.md: with the hooks out of
// reach, deleting an actor hangs with its workload in place; the documented
// patch releases it, and the queue keeps its messages.
func TestStuckActorRelease(t *testing.T) {
	if !env.Rabbit {
		testenv.Missing(t, "RabbitMQ", fmt.Errorf("not listening on 127.0.0.1:5672"))
	}
	ctx := testenv.CtxFor(t, 2*time.Minute)
	ns, name := "e2e-uninstall", "stuck-"+env.RunID
	testenv.EnsureNamespace(t, ctx, ns, true)
	rabbit := testenv.Rabbit(t)
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	testenv.MapAt(a, "metadata")["name"] = name
	createActor(t, ctx, a)
	queue := "asya-" + name
	t.Cleanup(func() {
		if testenv.QueueExists(t, rabbit, queue) {
			testenv.DeleteQueue(t, rabbit, queue)
		}
	})
	const messages = 3
	queueWithMessages(t, rabbit, name, messages)

	// asya-sync uninstalled: Metacontroller's calls reach nothing.
	k := env.Cluster.Client
	gone, err := testenv.NewDriver(ctx, k, testenv.AtBaseURL(env.CC, fmt.Sprintf("https://127.0.0.1:%d", testenv.ClosedPort(t))))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, testenv.ActorGVR(), ns, name); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := gone.Reconcile(ctx, ns, name); err == nil {
			t.Fatalf("finalize pass %d with the hooks unreachable succeeded", i+1)
		}
	}
	stuck := testenv.GetActor(t, ctx, ns, name)
	if testenv.Field(stuck, "metadata", "deletionTimestamp") == nil || !testenv.HasFinalizer(stuck, env.Driver.Finalizer()) {
		t.Fatalf("deleted actor is not stuck on the finalizer: %s", testenv.MustJSON(stuck["metadata"]))
	}
	deployGVR, _ := k.ByKind(ctx, "apps/v1", "Deployment")
	if _, err := k.Get(ctx, deployGVR, ns, name); err != nil {
		t.Errorf("the stuck actor's Deployment: %v (its pods should keep running)", err)
	}

	runDocBlock(t, "docs/uninstall.md", "release-stuck-actor", ns, "NAME="+name)
	if _, err := k.Get(ctx, testenv.ActorGVR(), ns, name); !testenv.IsStatus(err, 404) {
		t.Fatalf("actor after the documented patch: %v, want gone", err)
	}
	testenv.WantMessages(t, rabbit, queue, messages, "after the release")
}
