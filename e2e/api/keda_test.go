//go:build e2e

package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// soCondition is the ScaledObject's Ready condition as KEDA set it (nil
// while KEDA has not said).
func soCondition(t *testing.T, ctx context.Context, ns, name string) testenv.Obj {
	t.Helper()
	r := testenv.GVR{APIVersion: "keda.sh/v1alpha1", Resource: "scaledobjects", Kind: "ScaledObject", Namespaced: true}
	so, err := env.Cluster.Client.Get(ctx, r, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return conditions(so)["Ready"]
}

// scalingFollowsKEDA syncs the actor until KEDA has judged its
// ScaledObject (Ready True or False, and KEDA's message), then until the
// actor's ScalingReady says the same; it returns KEDA's verdict.
func scalingFollowsKEDA(t *testing.T, ctx context.Context, ns, name string) (kedaSays, msg string) {
	t.Helper()
	syncingUntil(t, ctx, env.Driver, ns, name, time.Minute, "KEDA's verdict on the ScaledObject", func() error {
		c := soCondition(t, ctx, ns, name)
		kedaSays, msg = testenv.Str(c, "status"), testenv.Str(c, "message")
		if kedaSays == "" || kedaSays == "Unknown" {
			return fmt.Errorf("Ready is %s", testenv.MustJSON(c))
		}
		return nil
	})
	// KEDA may judge again meanwhile (a scaler failing at its first poll):
	// the actor follows its verdict of the moment.
	syncingUntil(t, ctx, env.Driver, ns, name, 30*time.Second, "the actor's ScalingReady follows KEDA", func() error {
		actorSays := testenv.Str(conditions(testenv.GetActor(t, ctx, ns, name))["ScalingReady"], "status")
		c := soCondition(t, ctx, ns, name)
		kedaSays, msg = testenv.Str(c, "status"), testenv.Str(c, "message")
		return want("ScalingReady (KEDA says "+kedaSays+")", actorSays, kedaSays)
	})
	return kedaSays, msg
}

// awaitKEDA waits, when KEDA runs, until it has judged the actor's
// ScaledObject, then syncs the actor until it settles on that verdict, as
// Metacontroller does on the watch event of KEDA's status write.
func awaitKEDA(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	if env.KEDA == nil {
		return
	}
	err := testenv.WaitFor("KEDA's verdict on ScaledObject "+ns+"/"+name, time.Minute, env.KEDA.Operator, func() error {
		if s := testenv.Str(soCondition(t, ctx, ns, name), "status"); s != "True" && s != "False" {
			return fmt.Errorf("Ready is %q", s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	converge(t, ctx, ns, name)
}

// conditionIs is nil when the condition has the status, else an error
// showing the condition.
func conditionIs(c testenv.Obj, status string) error {
	if testenv.Str(c, "status") == status {
		return nil
	}
	return fmt.Errorf("condition is %s", testenv.MustJSON(c))
}
