//go:build e2e

package testenv

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"
)

// finalizeLeftovers deletes every actor the tests left behind and drives
// finalize on each through the driver, so that every shape of actor the
// tests created goes through finalize once, and checks that none leaves a
// child behind once garbage collection has run. Finalize reports done only
// once the actor's queue is released, so the brokers are left without test
// queues.
//
// Run runs it after the tests, whichever ran (-run) and in whatever
// order (-shuffle): it finalizes what those tests left. It reports every
// failure on stderr and returns false if there was one.
func finalizeLeftovers() (ok bool) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "e2e cleanup: panic: %v\n%s", r, debug.Stack())
			ok = false
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	actors, err := env.Cluster.Client.List(ctx, ActorGVR(), "", "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e cleanup: list actors:", err)
		return false
	}
	if env.Driver == nil && len(actors) > 0 {
		// The node tier's tests finalize their own actors.
		fmt.Fprintf(os.Stderr, "e2e cleanup: %d actors left behind, none finalized\n", len(actors))
		return false
	}
	failed := 0
	for _, a := range actors {
		id := Str(a, "metadata", "namespace") + "/" + Str(a, "metadata", "name")
		if err := finalizeLeftover(ctx, a); err != nil {
			fmt.Fprintf(os.Stderr, "e2e cleanup: %s: %v\n", id, err)
			failed++
		} else if testing.Verbose() {
			fmt.Printf("e2e cleanup: %s finalized\n", id)
		}
	}
	env.Timed(fmt.Sprintf("finalize %d leftover actors", len(actors)), start)
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "e2e cleanup: FAILED: %d of %d leftover actors not cleaned up\n", failed, len(actors))
		return false
	}
	fmt.Printf("e2e cleanup: %d leftover actors finalized\n", len(actors))
	return true
}

// finalizeLeftover finalizes the actor a, waits for garbage collection and
// checks that the driver finds no child of it afterwards.
func finalizeLeftover(ctx context.Context, a Obj) error {
	if _, err := FinalizeActor(ctx, Str(a, "metadata", "namespace"), Str(a, "metadata", "name")); err != nil {
		return err
	}
	kids, err := env.Driver.ClaimChildren(ctx, a)
	if err != nil {
		return err
	}
	var left []string
	for key, g := range kids {
		if names := Keys(g.(Obj)); len(names) > 0 {
			left = append(left, fmt.Sprintf("%s %v", key, names))
		}
	}
	if len(left) > 0 {
		sort.Strings(left)
		return fmt.Errorf("children left after finalize: %s", strings.Join(left, ", "))
	}
	return nil
}
