//go:build e2e

package metacontroller

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"

	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// TestMetacontrollerPinsRuntime runs an upgrade of asya-sync to another
// runtime script through the real Metacontroller, as helm upgrade does
// (the service and the CompositeController change together): the actor's
// Deployment keeps its pod template, so no pod rolls, and gains
// asya.sh/runtime-pending; its ConfigMap keeps the running script. Once the
// actor is annotated asya.sh/runtime-update: Immediate, Metacontroller's
// update gives the pod template and the ConfigMap the new script and drops
// runtime-pending, under either apply strategy. Like
// TestMetacontrollerCost it runs only with ASYA_METACONTROLLER_BIN.
func TestMetacontrollerPinsRuntime(t *testing.T) {
	ctx := testenv.CtxFor(t, 5*time.Minute)
	k := env.Cluster.Client
	id, mc := testenv.MetacontrollerFor(t, ctx, "rollout")

	current, err := os.ReadFile(filepath.Join(env.Root, "runtime", "asya_runtime.py"))
	if err != nil {
		t.Fatal(err)
	}
	next := string(current) + "# the next release's runtime\n"
	nextPath := filepath.Join(t.TempDir(), "asya_runtime.py")
	if err := os.WriteFile(nextPath, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	oldHash, nextHash := asyaruntime.Hash(string(current)), asyaruntime.Hash(next)

	ns := "mc-" + id
	testenv.EnsureNamespace(t, ctx, ns, true)
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	testenv.MapAt(a, "metadata")["name"] = "pinned"
	testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
	defer testenv.MCDelete(t, ns, "pinned")
	deployments := testenv.GVR{APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
	configMaps := testenv.GVR{APIVersion: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	// state is what the actor's pods are given: the template's runtime
	// hash, the ConfigMap's script's hash, the pending runtime, and
	// whether the pod template is still the one first created. (The
	// Deployment's generation rises with its annotations too, which the
	// Deployment controller copies to the ReplicaSet without a roll.)
	var created string
	state := func() (string, error) {
		d, err := k.Get(ctx, deployments, ns, "pinned")
		if err != nil {
			return "", err
		}
		cm, err := k.Get(ctx, configMaps, ns, "pinned-asya-runtime")
		if err != nil {
			return "", err
		}
		template := testenv.MustJSON(testenv.Field(d, "spec", "template"))
		if created == "" {
			created = template
		}
		return fmt.Sprintf("template %s, configMap %s, pending %q, pod template as created %v",
			testenv.Str(d, "spec", "template", "metadata", "annotations", "asya.sh/runtime-hash"),
			asyaruntime.Hash(testenv.Str(cm, "data", "asya_runtime.py")),
			testenv.Str(d, "metadata", "annotations", "asya.sh/runtime-pending"), template == created), nil
	}
	await := func(step, want string) {
		t.Helper()
		var got string
		err := testenv.WaitUntilEvery(ctx, 90*time.Second, time.Second, func() bool {
			s, err := state()
			if got = s; err != nil {
				got = err.Error()
			}
			return got == want
		})
		if err != nil {
			t.Fatalf("%s: the actor's children say %s, want %s\n%s", step, got, want, mc.Tail(20))
		}
	}

	serve := func(i int, extraEnv []string) {
		testenv.MCServe(t, ctx, id, fmt.Sprintf("%s-%d", id, i), "", extraEnv)
	}
	serve(0, nil)
	if _, err := k.Create(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	await("created", fmt.Sprintf("template %s, configMap %s, pending %q, pod template as created true", oldHash, oldHash, ""))

	serve(1, []string{"ASYA_RUNTIME_SCRIPT_PATH=" + nextPath})
	await("upgraded", fmt.Sprintf("template %s, configMap %s, pending %q, pod template as created true", oldHash, oldHash, nextHash))
	time.Sleep(3 * time.Second) // more syncs change nothing
	await("upgraded, later", fmt.Sprintf("template %s, configMap %s, pending %q, pod template as created true", oldHash, oldHash, nextHash))

	patch := testenv.Obj{"metadata": testenv.Obj{"annotations": testenv.Obj{"asya.sh/runtime-update": "Immediate"}}}
	if _, err := k.Do(ctx, "PATCH", testenv.ActorGVR().Path(ns, "pinned"), patch, "application/merge-patch+json"); err != nil {
		t.Fatal(err)
	}
	await("opted in", fmt.Sprintf("template %s, configMap %s, pending %q, pod template as created false", nextHash, nextHash, ""))
}
