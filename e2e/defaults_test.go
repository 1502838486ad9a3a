//go:build e2e

package e2e

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asya-sh/asya-sync/api/hook"
)

// TestFlatRetryDefaultsAtAdmission: the API server gives resiliency.retry
// the defaults the hook gives an actor that reaches it without them
// (admitted by an older CRD, or rendered from a file), to the byte: the
// sidecar's environment is the same either way, so an actor's pods do not
// roll when the CRD is upgraded under it.
func TestFlatRetryDefaultsAtAdmission(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	ensureNamespace(t, ctx, actorNS, false)
	for _, tc := range []struct {
		name       string
		resiliency obj
	}{
		{"empty", obj{"retry": obj{}}},
		{"partial", obj{"retry": obj{"policy": "constant", "maxAttempts": 0, "jitter": false}, "actorTimeout": "30s"}},
		{"set", obj{"retry": obj{"policy": "exponential", "maxAttempts": 5, "initialInterval": "2s", "maxInterval": "1m",
			"backoffCoefficient": 1.5, "jitter": true}}},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := obj{"actor": "retry-" + tc.name, "image": "python:3.12-slim", "handler": "m.f"}
			if tc.resiliency != nil {
				spec["resiliency"] = tc.resiliency
			}
			a := obj{"apiVersion": actorGVR().APIVersion, "kind": actorGVR().Kind,
				"metadata": obj{"name": "retry-" + tc.name, "namespace": actorNS}, "spec": spec}
			body, _ := json.Marshal(a)
			q := url.Values{"dryRun": {"All"}, "fieldValidation": {"Strict"}}
			admitted, code, err := env.cluster.client.raw(ctx, "POST", actorGVR().path(actorNS, "")+"?"+q.Encode(), body, "application/json")
			if err != nil || code != 201 {
				t.Fatalf("dry-run create: %d %v %s", code, err, firstLine(admitted))
			}
			byServer, specErr, err := hook.DecodeParent(admitted, nil)
			if err != nil || specErr != nil {
				t.Fatalf("decode the admitted actor: %v %v", err, specErr)
			}
			byHook, specErr, err := hook.DecodeParent(body, nil)
			if err != nil || specErr != nil {
				t.Fatalf("decode the actor as written: %v %v", err, specErr)
			}
			if diff := cmp.Diff(byHook.Spec.Resiliency, byServer.Spec.Resiliency); diff != "" {
				t.Errorf("resiliency defaulted by the hook (-) and at admission (+):\n%s", diff)
			}
			t.Logf("admitted: %s", mustJSON(field(mustObj(t, admitted), "spec", "resiliency")))
		})
	}
}

func mustObj(t *testing.T, data []byte) obj {
	t.Helper()
	var o obj
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	return o
}
