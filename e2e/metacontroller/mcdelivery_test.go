//go:build e2e

package metacontroller

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestMetacontrollerSwitchesRuntimeDelivery moves one actor through every
// runtime delivery and back with the real Metacontroller, as a user does
// with helm upgrade: the service's configuration and the chart's
// CompositeController change together. After each step the Deployment
// Metacontroller updated must hold the script's volume with exactly the
// new delivery's source, and the init container only with initContainer:
// Metacontroller's dynamic apply merges volumes by name, so a source left
// from the step before would make the template invalid. Like
// TestMetacontrollerCost it runs only with ASYA_METACONTROLLER_BIN.
func TestMetacontrollerSwitchesRuntimeDelivery(t *testing.T) {
	ctx := testenv.CtxFor(t, 10*time.Minute)
	k := env.Cluster.Client
	id, mc := testenv.MetacontrollerFor(t, ctx, "delivery")

	ns := "mc-" + id
	testenv.EnsureNamespace(t, ctx, ns, true)
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	testenv.MapAt(a, "metadata")["name"] = "switch"
	testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
	// Finalized while Metacontroller still runs, before it stops.
	defer testenv.MCDelete(t, ns, "switch")
	for i, delivery := range []string{"configMap", "initContainer", "podTemplate", "initContainer", "configMap"} {
		extra := fmt.Sprintf("runtimeDelivery: %s\nruntimeImage: asya-sync:test\n", delivery)
		testenv.MCServe(t, ctx, id, fmt.Sprintf("%s-%d", id, i), extra, nil)
		if i == 0 {
			if _, err := k.Create(ctx, a, false); err != nil {
				t.Fatal(err)
			}
		}
		var got string
		err := testenv.WaitUntilEvery(ctx, 90*time.Second, time.Second, func() bool {
			d, err := k.Get(ctx, testenv.GVR{APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}, ns, "switch")
			if err != nil {
				got = err.Error()
				return false
			}
			got = runtimeDeliveryOf(d)
			return got == delivery
		})
		if err != nil {
			t.Fatalf("step %d, %s: the Deployment's template delivers the script as %q\n%s", i, delivery, got, mc.Tail(20))
		}
	}
}

// runtimeDeliveryOf says how a Deployment's template delivers the script,
// or what is wrong with it: the asya-runtime volume must have exactly one
// source, and the init container must be there with an emptyDir only.
func runtimeDeliveryOf(d testenv.Obj) string {
	spec := testenv.MapAt(d, "spec", "template", "spec")
	var sources []string
	volumes, _ := spec["volumes"].([]any)
	for _, v := range volumes {
		if v := v.(testenv.Obj); v["name"] == "asya-runtime" {
			for key := range v {
				if key != "name" {
					sources = append(sources, key)
				}
			}
		}
	}
	writer := false
	inits, _ := spec["initContainers"].([]any)
	for _, c := range inits {
		writer = writer || c.(testenv.Obj)["name"] == "asya-runtime-init"
	}
	switch {
	case len(sources) != 1:
		return fmt.Sprintf("volume sources %v", sources)
	case sources[0] == "configMap" && !writer:
		return "configMap"
	case sources[0] == "downwardAPI" && !writer:
		return "podTemplate"
	case sources[0] == "emptyDir" && writer:
		return "initContainer"
	}
	return fmt.Sprintf("volume source %s, init container %v", sources[0], writer)
}
