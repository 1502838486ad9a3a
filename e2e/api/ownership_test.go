//go:build e2e

package api

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestOneQueueOneOwner runs three actors named "shared" in three namespaces
// on one RabbitMQ transport through the CompositeController as shipped
// (hook version v2, the customize rule for actors of the same name): the
// first owns asya-shared, the others stand by without consuming; deleting a
// standby actor or the owner keeps the queue and its message for the next
// in line, which takes it over; deleting the last actor deletes the queue.
func TestOneQueueOneOwner(t *testing.T) {
	if !env.Rabbit {
		t.Skip("RabbitMQ not listening on 127.0.0.1:5672")
	}
	ctx := testenv.CtxFor(t, 3*time.Minute)
	rabbit := testenv.Rabbit(t)
	const name, queue = "shared", "asya-shared"
	spaces := []string{"e2e-own-a", "e2e-own-b", "e2e-own-c"}
	for i, ns := range spaces {
		testenv.EnsureNamespace(t, ctx, ns, true)
		if i > 0 {
			// creationTimestamp has a resolution of one second.
			time.Sleep(1100 * time.Millisecond)
		}
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
		testenv.MapAt(a, "metadata")["name"] = name
		testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
		testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"enabled": true}
		createActor(t, ctx, a)
	}
	t.Cleanup(func() {
		if testenv.QueueExists(t, rabbit, queue) {
			testenv.DeleteQueue(t, rabbit, queue)
		}
	})

	owner := spaces[0] + "/" + name
	for _, ns := range spaces[1:] {
		wantStandby(t, ctx, ns, name, owner)
	}
	wantOwner(t, ctx, spaces[0], name)

	testenv.Publish(t, rabbit, queue)
	deleteAndFinalize(t, ctx, spaces[1], name)
	testenv.WantMessages(t, rabbit, queue, 1, "after the standby actor in "+spaces[1]+" was deleted")

	deleteAndFinalize(t, ctx, spaces[0], name)
	testenv.WantMessages(t, rabbit, queue, 1, "after the owner was deleted while "+spaces[2]+" still claims the name")

	// The next resync of the last actor takes the queue over.
	converge(t, ctx, spaces[2], name)
	wantOwner(t, ctx, spaces[2], name)
	testenv.WantMessages(t, rabbit, queue, 1, "after the takeover")

	deleteAndFinalize(t, ctx, spaces[2], name)
	if testenv.QueueExists(t, rabbit, queue) {
		t.Errorf("queue %s still exists after the last actor of its name was deleted", queue)
	}
}

func wantStandby(t *testing.T, ctx context.Context, ns, name, owner string) {
	t.Helper()
	a := testenv.GetActor(t, ctx, ns, name)
	c := conditions(a)["TransportReady"]
	if testenv.Str(a, "status", "status") != "TransportError" || testenv.Str(c, "reason") != "QueueConflict" || !strings.Contains(testenv.Str(c, "message"), owner) {
		t.Errorf("%s/%s: status %q, TransportReady %s; want TransportError, QueueConflict naming %s",
			ns, name, testenv.Str(a, "status", "status"), testenv.MustJSON(c), owner)
	}
	kids := childrenOf(t, ctx, ns, name)
	if kids["ScaledObject/"+name] != nil {
		t.Errorf("%s/%s: a standby actor has a ScaledObject", ns, name)
	}
	if d := kids["Deployment/"+name]; d == nil || fmt.Sprint(testenv.Field(d, "spec", "replicas")) != "0" {
		t.Errorf("%s/%s: Deployment replicas %v, want 0", ns, name, testenv.Field(d, "spec", "replicas"))
	}
}

func wantOwner(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	a := testenv.GetActor(t, ctx, ns, name)
	if c := conditions(a)["TransportReady"]; testenv.Str(c, "status") != "True" {
		t.Errorf("%s/%s: TransportReady %s, want True", ns, name, testenv.MustJSON(c))
	}
	if childrenOf(t, ctx, ns, name)["ScaledObject/"+name] == nil {
		t.Errorf("%s/%s: the owner has no ScaledObject", ns, name)
	}
}
