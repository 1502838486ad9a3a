//go:build e2e

package e2e

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
	if !env.rabbit {
		testenv.Missing(t, "RabbitMQ", fmt.Errorf("not listening on 127.0.0.1:5672"))
	}
	ctx := ctxFor(t, 2*time.Minute)
	ns, name := "e2e-uninstall", "stuck-"+env.runID
	ensureNamespace(t, ctx, ns, true)
	rabbit := testenv.Rabbit(t)
	a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	mapAt(a, "metadata")["name"] = name
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
	k := env.cluster.client
	gone, err := newDriver(ctx, k, atBaseURL(env.cc, fmt.Sprintf("https://127.0.0.1:%d", testenv.ClosedPort(t))))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.delete(ctx, actorGVR(), ns, name); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := gone.reconcile(ctx, ns, name); err == nil {
			t.Fatalf("finalize pass %d with the hooks unreachable succeeded", i+1)
		}
	}
	stuck := getActor(t, ctx, ns, name)
	if field(stuck, "metadata", "deletionTimestamp") == nil || !hasFinalizer(stuck, env.driver.finalizer()) {
		t.Fatalf("deleted actor is not stuck on the finalizer: %s", mustJSON(stuck["metadata"]))
	}
	deployGVR, _ := k.byKind(ctx, "apps/v1", "Deployment")
	if _, err := k.get(ctx, deployGVR, ns, name); err != nil {
		t.Errorf("the stuck actor's Deployment: %v (its pods should keep running)", err)
	}

	runDocBlock(t, "docs/uninstall.md", "release-stuck-actor", ns, "NAME="+name)
	if _, err := k.get(ctx, actorGVR(), ns, name); !isStatus(err, 404) {
		t.Fatalf("actor after the documented patch: %v, want gone", err)
	}
	wantMessages(t, rabbit, queue, messages, "after the release")
}
