//go:build e2e

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"
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
	ctx := ctxFor(t, time.Minute)
	const ns = "e2e-apply"
	ensureNamespace(t, ctx, ns, false)
	k := env.cluster.client
	// Any object can own the children; one that stays keeps the garbage
	// collector away from them.
	owner, err := k.apply(ctx, obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj{"name": "owner", "namespace": ns}}, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	ta := func(name string, spec obj) obj {
		return obj{"apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication",
			"metadata": obj{"name": name, "namespace": ns}, "spec": spec}
	}
	oldShape := obj{"secretTargetRef": []any{
		obj{"parameter": "awsAccessKeyID", "name": "aws-creds", "key": "access-key-id"},
		obj{"parameter": "awsSecretAccessKey", "name": "aws-creds", "key": "secret-access-key"},
	}}
	newShape := obj{"env": []any{
		obj{"parameter": "awsAccessKeyID", "name": "AWS_ACCESS_KEY_ID", "containerName": "asya-sidecar"},
		obj{"parameter": "awsSecretAccessKey", "name": "AWS_SECRET_ACCESS_KEY", "containerName": "asya-sidecar"},
	}}
	collapsed := obj{"secretTargetRef": []any{
		obj{"parameter": "awsSecretAccessKey", "name": "aws-creds", "key": "secret-access-key"},
		obj{"parameter": "awsSecretAccessKey", "name": "aws-creds", "key": "secret-access-key"},
	}}
	for _, tc := range []struct {
		strategy applyStrategy
		spec     obj
		want     obj
	}{
		{dynamicApply, oldShape, collapsed},
		{dynamicApply, newShape, newShape},
		{serverSideApply, oldShape, oldShape},
		{serverSideApply, newShape, newShape},
	} {
		name := string(tc.strategy) + "-" + map[bool]string{true: "old", false: "new"}[tc.spec["secretTargetRef"] != nil]
		t.Run(name, func(t *testing.T) {
			d := *env.driver
			d.strategy = tc.strategy
			r := gvr{APIVersion: "keda.sh/v1alpha1", Resource: "triggerauthentications", Kind: "TriggerAuthentication", Namespaced: true}
			desired := ta(name, tc.spec)
			if err := d.applyChild(ctx, owner, deepCopy(desired), nil, false); err != nil {
				t.Fatalf("create: %v", err)
			}
			if got := stored(t, ctx, r, ns, name); !jsonEqual(got, tc.spec) {
				t.Fatalf("created with spec %s, want it as given", mustJSON(got))
			}
			// KEDA's operator adds its finalizer meanwhile: read again
			// after a conflict, as Metacontroller's next sync does.
			for {
				observed, err := k.get(ctx, r, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				err = d.applyChild(ctx, owner, deepCopy(desired), observed, true)
				if errors.Is(err, errConflict) {
					continue
				}
				if err != nil && !errors.Is(err, errUnchanged) {
					t.Fatalf("update: %v", err)
				}
				break
			}
			if got := stored(t, ctx, r, ns, name); !jsonEqual(got, tc.want) {
				t.Errorf("after the first update: spec %s, want %s", mustJSON(got), mustJSON(tc.want))
			}
		})
	}
}

func stored(t *testing.T, ctx context.Context, r gvr, ns, name string) any {
	t.Helper()
	o, err := env.cluster.client.get(ctx, r, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return o["spec"]
}
