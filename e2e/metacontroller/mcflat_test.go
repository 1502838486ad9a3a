//go:build e2e

package metacontroller

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestMetacontrollerFlatActor runs an upstream 1.x manifest (most of the
// flat fields set) through the real Metacontroller: the children are
// created, a spec change reaches the Deployment, and after each step its
// lists (containers, init containers, volumes, env) hold exactly what
// asya-sync built, none merged into another by Metacontroller's apply.
// The actor is then finalized. Like TestMetacontrollerCost it runs only
// with ASYA_METACONTROLLER_BIN.
func TestMetacontrollerFlatActor(t *testing.T) {
	ctx := testenv.CtxFor(t, 5*time.Minute)
	k := env.Cluster.Client
	id, mc := testenv.MetacontrollerFor(t, ctx, "flat")
	extra := "flatActors: {transport: rabbitmq}\n"
	testenv.MCServe(t, ctx, id, id, extra, nil)

	ns := "mc-" + id
	testenv.EnsureNamespace(t, ctx, ns, true)
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "flat-1x.yaml"), ns)
	name := testenv.Str(a, "metadata", "name")
	if _, err := k.Create(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	defer testenv.MCDelete(t, ns, name)
	want := "containers asya-runtime,exporter,asya-sidecar; init fetch-model; volumes models,socket-dir,tmp,asya-runtime"
	awaitFlatDeployment(t, ctx, mc, ns, name, want, "MODEL=small")

	// A spec change, as kubectl apply makes it: the new variable reaches
	// the runtime and nothing else in the lists moves.
	env0 := testenv.Field(a, "spec", "env").([]any)
	testenv.MapAt(a, "spec")["env"] = append(env0, testenv.Obj{"name": "MODE", "value": "fast"})
	if _, err := k.Apply(ctx, a, "e2e"); err != nil {
		t.Fatal(err)
	}
	awaitFlatDeployment(t, ctx, mc, ns, name, want, "MODEL=small,MODE=fast")
	if phase := testenv.Str(testenv.GetActor(t, ctx, ns, name), "status", "phase"); phase == "" {
		t.Errorf("status has no phase: %s", testenv.MustJSON(testenv.GetActor(t, ctx, ns, name)["status"]))
	}
}

// awaitFlatDeployment waits until the actor's Deployment has the lists
// want describes and its runtime the user variables vars (name=value, in
// order).
func awaitFlatDeployment(t *testing.T, ctx context.Context, mc *testenv.MCProcess, ns, name, want, vars string) {
	t.Helper()
	var got string
	err := testenv.WaitUntilEvery(ctx, 90*time.Second, time.Second, func() bool {
		d, err := env.Cluster.Client.Get(ctx, testenv.GVR{APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}, ns, name)
		if err != nil {
			got = err.Error()
			return false
		}
		got = flatLayout(d)
		return got == want+"; runtime env "+vars
	})
	if err != nil {
		t.Fatalf("Deployment %s/%s: %s, want %s; runtime env %s\n%s", ns, name, got, want, vars, mc.Tail(20))
	}
}

// flatLayout names what a flat actor's Deployment holds, in order.
func flatLayout(d testenv.Obj) string {
	spec := testenv.MapAt(d, "spec", "template", "spec")
	names := func(key string) string {
		var out []string
		items, _ := spec[key].([]any)
		for _, it := range items {
			out = append(out, fmt.Sprint(it.(testenv.Obj)["name"]))
		}
		return strings.Join(out, ",")
	}
	var vars []string
	containers, _ := spec["containers"].([]any)
	for _, c := range containers {
		if c.(testenv.Obj)["name"] != "asya-runtime" {
			continue
		}
		for _, e := range c.(testenv.Obj)["env"].([]any) {
			if n := fmt.Sprint(e.(testenv.Obj)["name"]); slices.Contains([]string{"MODEL", "MODE"}, n) {
				vars = append(vars, n+"="+fmt.Sprint(e.(testenv.Obj)["value"]))
			}
		}
	}
	return fmt.Sprintf("containers %s; init %s; volumes %s; runtime env %s",
		names("containers"), names("initContainers"), names("volumes"), strings.Join(vars, ","))
}
