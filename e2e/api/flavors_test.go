//go:build e2e

package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// flavorObj is an EnvironmentConfig holding a flavor's data.
func flavorObj(name string, data testenv.Obj) testenv.Obj {
	return testenv.Obj{"apiVersion": "apiextensions.crossplane.io/v1beta1", "kind": "EnvironmentConfig",
		"metadata": testenv.Obj{"name": name, "labels": testenv.Obj{"asya.sh/flavor": name}}, "data": data}
}

// applyFlavor creates or replaces a flavor, deleted when the test ends.
func applyFlavor(t *testing.T, ctx context.Context, name string, data testenv.Obj) {
	t.Helper()
	if _, err := env.Cluster.Client.Apply(ctx, flavorObj(name, data), "e2e"); err != nil {
		t.Fatalf("apply EnvironmentConfig %s: %v", name, err)
	}
	t.Cleanup(func() { deleteFlavor(context.Background(), name) })
}

func deleteFlavor(ctx context.Context, name string) error {
	r, err := env.Cluster.Client.ByKind(ctx, "apiextensions.crossplane.io/v1beta1", "EnvironmentConfig")
	if err != nil {
		return err
	}
	if err := env.Cluster.Client.Delete(ctx, r, "", name); err != nil && !testenv.IsStatus(err, 404) {
		return err
	}
	return nil
}

// TestFlavors: with no Crossplane, EnvironmentConfigs served by the CRD
// asya-sync ships are an actor's flavors. Their stateProxy, env and node
// selector are merged into what it runs, a change to one reaches it at
// its next sync, and one deleted is named in its status while its
// Deployment stays as it was.
func TestFlavors(t *testing.T) {
	ctx := testenv.CtxFor(t, 3*time.Minute)
	ns := "e2e-flavors"
	testenv.EnsureNamespace(t, ctx, ns, true)
	persistence, gpu := "e2e-persistence-"+env.RunID, "e2e-gpu-"+env.RunID // cluster-scoped
	connector := func(bucket string) testenv.Obj {
		return testenv.Obj{"stateProxy": []any{testenv.Obj{"name": "checkpoints", "mount": testenv.Obj{"path": "/state/checkpoints"},
			"connector": testenv.Obj{"image": "ghcr.io/deliveryhero/asya-state-proxy-s3-buffered-lww:v1.0.0",
				"env": []any{testenv.Obj{"name": "STATE_BUCKET", "value": bucket}}}}}}
	}
	applyFlavor(t, ctx, persistence, connector("results"))
	applyFlavor(t, ctx, gpu, testenv.Obj{"nodeSelector": testenv.Obj{"accelerator": "nvidia-l4"},
		"env": []any{testenv.Obj{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}}})

	name := "flavored"
	createActor(t, ctx, testenv.Obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": testenv.Obj{"name": name, "namespace": ns},
		"spec": testenv.Obj{"actor": name, "image": "python:3.12-slim", "handler": "m.f", "flavors": []any{persistence, gpu},
			"env": []any{testenv.Obj{"name": "ASYA_PERSISTENCE_MOUNT", "value": "/state/checkpoints/flavored"}}}})
	t.Cleanup(func() { deleteAndFinalize(t, context.Background(), ns, name) })

	d := childrenOf(t, ctx, ns, name)["Deployment/"+name]
	if d == nil {
		t.Fatalf("no Deployment; status %s", testenv.MustJSON(testenv.GetActor(t, ctx, ns, name)["status"]))
	}
	if got := containerEnv(d, "asya-state-proxy-checkpoints")["STATE_BUCKET"]; got != "results" {
		t.Errorf("connector STATE_BUCKET %q, want the flavor's results; containers %s", got,
			testenv.MustJSON(testenv.Field(d, "spec", "template", "spec", "containers")))
	}
	runtime := containerEnv(d, "asya-runtime")
	if got := runtime["ASYA_STATE_PROXY_MOUNTS"]; got != "checkpoints:/state/checkpoints:write=buffered" {
		t.Errorf("runtime ASYA_STATE_PROXY_MOUNTS %q", got)
	}
	if _, ok := runtime["CUDA_VISIBLE_DEVICES"]; ok {
		t.Errorf("runtime has the gpu flavor's env, which the actor's own env replaces: %v", runtime)
	}
	if runtime["ASYA_PERSISTENCE_MOUNT"] == "" {
		t.Errorf("runtime lacks the actor's own env: %v", runtime)
	}
	if got := testenv.Str(d, "spec", "template", "spec", "nodeSelector", "accelerator"); got != "nvidia-l4" {
		t.Errorf("nodeSelector accelerator %q, want the gpu flavor's", got)
	}

	t.Run("a changed flavor reaches the actor", func(t *testing.T) {
		applyFlavor(t, ctx, persistence, connector("results-v2"))
		converge(t, ctx, ns, name)
		d := childrenOf(t, ctx, ns, name)["Deployment/"+name]
		if got := containerEnv(d, "asya-state-proxy-checkpoints")["STATE_BUCKET"]; got != "results-v2" {
			t.Errorf("connector STATE_BUCKET %q after the flavor changed, want results-v2", got)
		}
	})

	t.Run("a deleted flavor is named and the workload kept", func(t *testing.T) {
		before := childrenOf(t, ctx, ns, name)["Deployment/"+name]
		if err := deleteFlavor(ctx, gpu); err != nil {
			t.Fatal(err)
		}
		converge(t, ctx, ns, name)
		c := conditions(testenv.GetActor(t, ctx, ns, name))["Ready"]
		if testenv.Str(c, "reason") != "InvalidSpec" || !strings.Contains(testenv.Str(c, "message"), `"`+gpu+`"`) {
			t.Errorf("Ready %s, want InvalidSpec naming %s", testenv.MustJSON(c), gpu)
		}
		after := childrenOf(t, ctx, ns, name)["Deployment/"+name]
		if after == nil || testenv.Str(after, "metadata", "uid") != testenv.Str(before, "metadata", "uid") ||
			testenv.MustJSON(testenv.Field(after, "spec", "template")) != testenv.MustJSON(testenv.Field(before, "spec", "template")) {
			t.Errorf("the Deployment changed while its flavor was missing:\nbefore %s\nafter %s",
				testenv.MustJSON(testenv.Field(before, "spec", "template")), testenv.MustJSON(testenv.Field(after, "spec", "template")))
		}
	})
}
