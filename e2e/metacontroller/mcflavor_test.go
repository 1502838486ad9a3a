//go:build e2e

package metacontroller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestMetacontrollerFlavors: the real Metacontroller fetches the flavors
// the customize hook names (cluster-scoped EnvironmentConfigs, by name)
// and resyncs the actor when one changes: the new value reaches the
// Deployment with no change to the actor. A flavor deleted is named in
// the status while the Deployment keeps what it had.
func TestMetacontrollerFlavors(t *testing.T) {
	ctx := testenv.CtxFor(t, 5*time.Minute)
	k := env.Cluster.Client
	id, mc := testenv.MetacontrollerFor(t, ctx, "flavors")
	testenv.MCServe(t, ctx, id, id, "flatActors: {transport: rabbitmq}\n", nil)
	ecGVR, err := k.ByKind(ctx, "apiextensions.crossplane.io/v1beta1", "EnvironmentConfig")
	if err != nil {
		t.Fatal(err)
	}
	flavor := "mc-persistence-" + id
	applyFlavor := func(bucket string) {
		t.Helper()
		ec := testenv.Obj{"apiVersion": "apiextensions.crossplane.io/v1beta1", "kind": "EnvironmentConfig",
			"metadata": testenv.Obj{"name": flavor, "labels": testenv.Obj{"asya.sh/flavor": flavor}},
			"data": testenv.Obj{"stateProxy": []any{testenv.Obj{"name": "results", "mount": testenv.Obj{"path": "/state/results"},
				"connector": testenv.Obj{"image": "ghcr.io/deliveryhero/asya-state-proxy-s3-buffered-lww:v1.0.0",
					"env": []any{testenv.Obj{"name": "STATE_BUCKET", "value": bucket}}}}}}}
		if _, err := k.Apply(ctx, ec, "e2e"); err != nil {
			t.Fatal(err)
		}
	}
	applyFlavor("results")
	defer k.Delete(context.Background(), ecGVR, "", flavor)

	ns := "mc-" + id
	testenv.EnsureNamespace(t, ctx, ns, true)
	name := "flavored"
	a := testenv.Obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": testenv.Obj{"name": name, "namespace": ns},
		"spec": testenv.Obj{"actor": name, "image": "python:3.12-slim", "handler": "m.f", "flavors": []any{flavor}}}
	if _, err := k.Create(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	defer testenv.MCDelete(t, ns, name)
	deployments := testenv.GVR{APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
	awaitBucket := func(want string) {
		t.Helper()
		var got string
		err := testenv.WaitUntilEvery(ctx, 90*time.Second, time.Second, func() bool {
			d, err := k.Get(ctx, deployments, ns, name)
			if err != nil {
				got = err.Error()
				return false
			}
			got = connectorBucket(d)
			return got == want
		})
		if err != nil {
			t.Fatalf("Deployment %s/%s: connector STATE_BUCKET %q, want %q\n%s", ns, name, got, want, mc.Tail(20))
		}
	}
	awaitBucket("results")
	applyFlavor("results-v2")
	awaitBucket("results-v2")

	if err := k.Delete(ctx, ecGVR, "", flavor); err != nil {
		t.Fatal(err)
	}
	var ready testenv.Obj
	err = testenv.WaitUntilEvery(ctx, 90*time.Second, time.Second, func() bool {
		for _, c := range testenv.Field(testenv.GetActor(t, ctx, ns, name), "status", "conditions").([]any) {
			if testenv.Str(c.(testenv.Obj), "type") == "Ready" {
				ready = c.(testenv.Obj)
			}
		}
		return testenv.Str(ready, "reason") == "InvalidSpec" && strings.Contains(testenv.Str(ready, "message"), flavor)
	})
	if err != nil {
		t.Fatalf("Ready %s, want InvalidSpec naming %s\n%s", testenv.MustJSON(ready), flavor, mc.Tail(20))
	}
	awaitBucket("results-v2") // kept as last applied
}

// connectorBucket is the results connector's STATE_BUCKET, or what the
// Deployment has instead.
func connectorBucket(d testenv.Obj) string {
	containers, _ := testenv.Field(d, "spec", "template", "spec", "containers").([]any)
	for _, c := range containers {
		if testenv.Str(c.(testenv.Obj), "name") != "asya-state-proxy-results" {
			continue
		}
		for _, e := range testenv.Field(c.(testenv.Obj), "env").([]any) {
			if testenv.Str(e.(testenv.Obj), "name") == "STATE_BUCKET" {
				return testenv.Str(e.(testenv.Obj), "value")
			}
		}
	}
	return "no connector"
}
