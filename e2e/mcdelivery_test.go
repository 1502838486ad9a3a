//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
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
	ctx := ctxFor(t, 10*time.Minute)
	k := env.cluster.client
	id, mc := metacontrollerFor(t, ctx, "delivery")

	ns := "mc-" + id
	ensureNamespace(t, ctx, ns, true)
	a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	mapAt(a, "metadata")["name"] = "switch"
	mapAt(a, "spec")["transport"] = "rabbitmq"
	// Finalized while Metacontroller still runs, before it stops.
	defer mcDelete(t, ns, "switch")
	for i, delivery := range []string{"configMap", "initContainer", "podTemplate", "initContainer", "configMap"} {
		extra := fmt.Sprintf("runtimeDelivery: %s\nruntimeImage: asya-sync:test\n", delivery)
		mcServe(t, ctx, id, fmt.Sprintf("%s-%d", id, i), extra, nil)
		if i == 0 {
			if _, err := k.create(ctx, a, false); err != nil {
				t.Fatal(err)
			}
		}
		var got string
		err := waitUntilEvery(ctx, 90*time.Second, time.Second, func() bool {
			d, err := k.get(ctx, gvr{APIVersion: "apps/v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}, ns, "switch")
			if err != nil {
				got = err.Error()
				return false
			}
			got = runtimeDeliveryOf(d)
			return got == delivery
		})
		if err != nil {
			t.Fatalf("step %d, %s: the Deployment's template delivers the script as %q\n%s", i, delivery, got, mc.tail(20))
		}
	}
}

// runtimeDeliveryOf says how a Deployment's template delivers the script,
// or what is wrong with it: the asya-runtime volume must have exactly one
// source, and the init container must be there with an emptyDir only.
func runtimeDeliveryOf(d obj) string {
	spec := mapAt(d, "spec", "template", "spec")
	var sources []string
	volumes, _ := spec["volumes"].([]any)
	for _, v := range volumes {
		if v := v.(obj); v["name"] == "asya-runtime" {
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
		writer = writer || c.(obj)["name"] == "asya-runtime-init"
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
