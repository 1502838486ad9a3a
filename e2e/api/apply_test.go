//go:build e2e

package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestDriverAppliesLikeMetacontroller applies the SQS TriggerAuthentication
// of static keys in its old shape (two secretTargetRef entries naming one
// Secret) and in today's (env entries of distinct names), then applies the
// same again, as Metacontroller's first sync after the create does. Dynamic
// apply collapses the old shape into two copies of its last entry, which is
// how SQS scaling broke under the real Metacontroller; server-side apply
// does not (KEDA's schema makes the list atomic); today's shape survives
// both.
func TestDriverAppliesLikeMetacontroller(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	const ns = "e2e-apply"
	testenv.EnsureNamespace(t, ctx, ns, false)
	k := env.Cluster.Client
	// Any object can own the children; one that stays keeps the garbage
	// collector away from them.
	owner, err := k.Apply(ctx, testenv.Obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": testenv.Obj{"name": "owner", "namespace": ns}}, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	ta := func(name string, spec testenv.Obj) testenv.Obj {
		return testenv.Obj{"apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication",
			"metadata": testenv.Obj{"name": name, "namespace": ns}, "spec": spec}
	}
	oldShape := testenv.Obj{"secretTargetRef": []any{
		testenv.Obj{"parameter": "awsAccessKeyID", "name": "aws-creds", "key": "access-key-id"},
		testenv.Obj{"parameter": "awsSecretAccessKey", "name": "aws-creds", "key": "secret-access-key"},
	}}
	newShape := testenv.Obj{"env": []any{
		testenv.Obj{"parameter": "awsAccessKeyID", "name": "AWS_ACCESS_KEY_ID", "containerName": "asya-sidecar"},
		testenv.Obj{"parameter": "awsSecretAccessKey", "name": "AWS_SECRET_ACCESS_KEY", "containerName": "asya-sidecar"},
	}}
	collapsed := testenv.Obj{"secretTargetRef": []any{
		testenv.Obj{"parameter": "awsSecretAccessKey", "name": "aws-creds", "key": "secret-access-key"},
		testenv.Obj{"parameter": "awsSecretAccessKey", "name": "aws-creds", "key": "secret-access-key"},
	}}
	for _, tc := range []struct {
		strategy testenv.ApplyStrategy
		spec     testenv.Obj
		want     testenv.Obj
	}{
		{testenv.DynamicApply, oldShape, collapsed},
		{testenv.DynamicApply, newShape, newShape},
		{testenv.ServerSideApply, oldShape, oldShape},
		{testenv.ServerSideApply, newShape, newShape},
	} {
		name := string(tc.strategy) + "-" + map[bool]string{true: "old", false: "new"}[tc.spec["secretTargetRef"] != nil]
		t.Run(name, func(t *testing.T) {
			d := *env.Driver
			d.Strategy = tc.strategy
			r := testenv.GVR{APIVersion: "keda.sh/v1alpha1", Resource: "triggerauthentications", Kind: "TriggerAuthentication", Namespaced: true}
			desired := ta(name, tc.spec)
			if err := d.ApplyChild(ctx, owner, testenv.DeepCopy(desired), nil, false); err != nil {
				t.Fatalf("create: %v", err)
			}
			if got := stored(t, ctx, r, ns, name); !testenv.JSONEqual(got, tc.spec) {
				t.Fatalf("created with spec %s, want it as given", testenv.MustJSON(got))
			}
			// KEDA's operator adds its finalizer meanwhile: read again
			// after a conflict, as Metacontroller's next sync does.
			for {
				observed, err := k.Get(ctx, r, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				err = d.ApplyChild(ctx, owner, testenv.DeepCopy(desired), observed, true)
				if errors.Is(err, testenv.ErrConflict) {
					continue
				}
				if err != nil && !errors.Is(err, testenv.ErrUnchanged) {
					t.Fatalf("update: %v", err)
				}
				break
			}
			if got := stored(t, ctx, r, ns, name); !testenv.JSONEqual(got, tc.want) {
				t.Errorf("after the first update: spec %s, want %s", testenv.MustJSON(got), testenv.MustJSON(tc.want))
			}
		})
	}
}

func stored(t *testing.T, ctx context.Context, r testenv.GVR, ns, name string) any {
	t.Helper()
	o, err := env.Cluster.Client.Get(ctx, r, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return o["spec"]
}
