//go:build e2e

package api

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestFlatRetryDefaultsAtAdmission: the API server gives resiliency.retry
// the defaults the hook gives an actor that reaches it without them
// (admitted by an older CRD, or rendered from a file), to the byte: the
// sidecar's environment is the same either way, so an actor's pods do not
// roll when the CRD is upgraded under it.
func TestFlatRetryDefaultsAtAdmission(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	testenv.EnsureNamespace(t, ctx, actorNS, false)
	for _, tc := range []struct {
		name       string
		resiliency testenv.Obj
	}{
		{"empty", testenv.Obj{"retry": testenv.Obj{}}},
		{"partial", testenv.Obj{"retry": testenv.Obj{"policy": "constant", "maxAttempts": 0, "jitter": false}, "actorTimeout": "30s"}},
		{"set", testenv.Obj{"retry": testenv.Obj{"policy": "exponential", "maxAttempts": 5, "initialInterval": "2s", "maxInterval": "1m",
			"backoffCoefficient": 1.5, "jitter": true}}},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testenv.Obj{"actor": "retry-" + tc.name, "image": "python:3.12-slim", "handler": "m.f"}
			if tc.resiliency != nil {
				spec["resiliency"] = tc.resiliency
			}
			a := testenv.Obj{"apiVersion": testenv.ActorGVR().APIVersion, "kind": testenv.ActorGVR().Kind,
				"metadata": testenv.Obj{"name": "retry-" + tc.name, "namespace": actorNS}, "spec": spec}
			body, _ := json.Marshal(a)
			q := url.Values{"dryRun": {"All"}, "fieldValidation": {"Strict"}}
			admitted, code, err := env.Cluster.Client.Raw(ctx, "POST", testenv.ActorGVR().Path(actorNS, "")+"?"+q.Encode(), body, "application/json")
			if err != nil || code != 201 {
				t.Fatalf("dry-run create: %d %v %s", code, err, testenv.FirstLine(admitted))
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
			t.Logf("admitted: %s", testenv.MustJSON(testenv.Field(mustObj(t, admitted), "spec", "resiliency")))
		})
	}
}

func mustObj(t *testing.T, data []byte) testenv.Obj {
	t.Helper()
	var o testenv.Obj
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	return o
}
