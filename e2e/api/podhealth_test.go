//go:build e2e

package api

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

var podsGVR = testenv.GVR{APIVersion: "v1", Resource: "pods", Kind: "Pod", Namespaced: true}

// TestPodHealthRead: with the default watch.pods (whileUnhealthy) the
// customize hook asks for no pods, and the service lists the pods of an
// actor whose workload is not settled from the API server itself: a pod
// whose runtime crash-loops is a RuntimeError quoting its last words. A
// pod of another actor, labelled for it, is not read.
func TestPodHealthRead(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	testenv.EnsureNamespace(t, ctx, actorNS, true)
	k := env.Cluster.Client
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
	name := "pods-read"
	testenv.MapAt(a, "metadata")["name"] = name
	createActor(t, ctx, a)
	if got := testenv.GetActor(t, ctx, actorNS, name); strings.Contains(testenv.MustJSON(got["status"]), "pod health not") {
		t.Fatalf("the status says pod health is not read: %s", testenv.MustJSON(got["status"]))
	}

	for _, p := range []struct{ pod, actor, lastWords string }{
		{name + "-1", name, "RuntimeError: broken handler module"},
		{"another-1", "another", "ValueError: not this actor's"},
	} {
		pod := testenv.Obj{"apiVersion": "v1", "kind": "Pod",
			"metadata": testenv.Obj{"name": p.pod, "namespace": actorNS, "labels": testenv.Obj{"asya.sh/asya": p.actor}},
			"spec":     testenv.Obj{"containers": []any{testenv.Obj{"name": "asya-runtime", "image": "python:3.13"}}}}
		created, err := k.Create(ctx, pod, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.Delete(ctx, podsGVR, actorNS, p.pod) })
		created["status"] = testenv.Obj{"phase": "Running", "containerStatuses": []any{testenv.Obj{
			"name": "asya-runtime", "image": "python:3.13", "imageID": "", "ready": false, "restartCount": 3,
			"state":     testenv.Obj{"waiting": testenv.Obj{"reason": "CrashLoopBackOff"}},
			"lastState": testenv.Obj{"terminated": testenv.Obj{"exitCode": 1, "reason": "Error", "message": p.lastWords}},
		}}}
		if _, err := k.Do(ctx, "PUT", podsGVR.Path(actorNS, p.pod)+"/status", created, "application/json"); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := env.Driver.Reconcile(ctx, actorNS, name); err != nil {
		t.Fatal(err)
	}
	got := testenv.GetActor(t, ctx, actorNS, name)
	status := testenv.MustJSON(got["status"])
	if s := testenv.Str(got, "status", "status"); s != "RuntimeError" {
		t.Errorf("status.status = %q, want RuntimeError: %s", s, status)
	}
	if !strings.Contains(status, "RuntimeError: broken handler module") || strings.Contains(status, "not this actor's") {
		t.Errorf("status does not quote this actor's pod alone: %s", status)
	}
}
