//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestFinalizeEverything runs last: it deletes every actor the other tests
// left behind and drives finalize on each, so every shape of actor goes
// through finalize once and the brokers are left without test queues.
func TestFinalizeEverything(t *testing.T) {
	ctx := ctxFor(t, 3*time.Minute)
	actors, err := env.cluster.client.list(ctx, actorGVR(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actors {
		ns, name := str(a, "metadata", "namespace"), str(a, "metadata", "name")
		t.Run(ns+"/"+name, func(t *testing.T) {
			deleteAndFinalize(t, ctx, ns, name)
			if kids, err := env.driver.claimChildren(ctx, a); err != nil {
				t.Fatal(err)
			} else {
				for key, g := range kids {
					if len(g.(obj)) > 0 {
						t.Errorf("%s children left after finalize: %v", key, keys(g.(obj)))
					}
				}
			}
		})
	}
}
