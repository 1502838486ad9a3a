//go:build e2e

package api

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

const actorNS = "e2e-actors"

// sqsName gives an SQS actor a name unique to this run.
func sqsName(a testenv.Obj) testenv.Obj {
	meta := testenv.MapAt(a, "metadata")
	meta["name"] = testenv.Str(meta, "name") + "-" + env.RunID
	return a
}

// createActor creates the actor and converges it; it returns the passes.
func createActor(t *testing.T, ctx context.Context, a testenv.Obj) []*testenv.Pass {
	t.Helper()
	if _, err := env.Cluster.Client.Create(ctx, a, false); err != nil {
		t.Fatalf("create %s: %v", testenv.Str(a, "metadata", "name"), err)
	}
	return converge(t, ctx, testenv.Str(a, "metadata", "namespace"), testenv.Str(a, "metadata", "name"))
}

func converge(t *testing.T, ctx context.Context, ns, name string) []*testenv.Pass {
	t.Helper()
	start := time.Now()
	passes, err := env.Driver.Converge(ctx, ns, name, 8)
	if err != nil {
		t.Fatalf("converge %s/%s: %v", ns, name, err)
	}
	env.Timed(fmt.Sprintf("converge %s/%s (%d passes)", ns, name, len(passes)), start)
	return passes
}

// childrenOf lists the objects the driver sees as the actor's children,
// as "Kind/name".
func childrenOf(t *testing.T, ctx context.Context, ns, name string) map[string]testenv.Obj {
	t.Helper()
	a, err := env.Cluster.Client.Get(ctx, testenv.ActorGVR(), ns, name)
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	a["apiVersion"], a["kind"] = testenv.ActorGVR().APIVersion, testenv.ActorGVR().Kind
	groups, err := env.Driver.ClaimChildren(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]testenv.Obj{}
	for _, g := range groups {
		for _, o := range g.(testenv.Obj) {
			out[testenv.Str(o.(testenv.Obj), "kind")+"/"+testenv.Str(o.(testenv.Obj), "metadata", "name")] = o.(testenv.Obj)
		}
	}
	return out
}

func conditions(a testenv.Obj) map[string]testenv.Obj {
	out := map[string]testenv.Obj{}
	list, _ := testenv.Field(a, "status", "conditions").([]any)
	for _, c := range list {
		out[testenv.Str(c.(testenv.Obj), "type")] = c.(testenv.Obj)
	}
	return out
}

// TestActorsChildrenAccepted creates one actor of every shape and checks
// that the children the hook returns are stored by the API server, with
// the CRD defaults, KEDA's schemas and core validation all applied.
func TestActorsChildrenAccepted(t *testing.T) {
	ctx := testenv.CtxFor(t, 3*time.Minute)
	testenv.EnsureNamespace(t, ctx, actorNS, true)
	type want struct {
		file     string
		sqs      bool
		children func(name string) []string
		check    func(t *testing.T, name string, kids map[string]testenv.Obj)
	}
	cases := []want{
		{file: "manual.yaml", children: func(n string) []string { return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n} },
			check: func(t *testing.T, n string, kids map[string]testenv.Obj) {
				d := kids["Deployment/"+n]
				if r := testenv.Field(d, "spec", "replicas"); fmt.Sprint(r) != "2" {
					t.Errorf("replicas = %v, want 2 (scaling off)", r)
				}
				if g := testenv.Field(d, "spec", "template", "spec", "terminationGracePeriodSeconds"); fmt.Sprint(g) != "20" {
					t.Errorf("terminationGracePeriodSeconds = %v, want 20", g)
				}
				if l := testenv.Str(d, "spec", "template", "metadata", "labels", "team"); l != "e2e" {
					t.Errorf("user pod label lost: %q", l)
				}
			}},
		{file: "stateful.yaml", children: func(n string) []string { return []string{"ConfigMap/" + n + "-asya-runtime", "StatefulSet/" + n} }},
		{file: "happy-end.yaml", children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n, "ScaledObject/" + n, "TriggerAuthentication/" + n + "-trigger-auth"}
		},
			check: func(t *testing.T, n string, kids map[string]testenv.Obj) {
				if r := testenv.Field(kids["Deployment/"+n], "spec", "replicas"); fmt.Sprint(r) != "<nil>" && fmt.Sprint(r) != "1" {
					// The API server defaults an omitted replicas to 1.
					t.Errorf("replicas = %v; with scaling on the hook must leave it to the HPA", r)
				}
				if !strings.Contains(testenv.MustJSON(testenv.Field(kids["Deployment/"+n], "spec", "template", "spec", "containers")), `"ASYA_IS_END_ACTOR"`) {
					t.Errorf("sidecar has no ASYA_IS_END_ACTOR")
				}
			}},
		{file: "sqs-irsa.yaml", sqs: true, children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n, "ScaledObject/" + n, "ServiceAccount/asya-" + n, "TriggerAuthentication/" + n + "-trigger-auth"}
		},
			check: func(t *testing.T, n string, kids map[string]testenv.Obj) {
				if sa := testenv.Str(kids["Deployment/"+n], "spec", "template", "spec", "serviceAccountName"); sa != "asya-"+n {
					t.Errorf("serviceAccountName = %q", sa)
				}
				if arn := testenv.Str(kids["ServiceAccount/asya-"+n], "metadata", "annotations", "eks.amazonaws.com/role-arn"); arn == "" {
					t.Errorf("ServiceAccount without role annotation")
				}
				// KEDA reads the queue with the workload's IRSA identity:
				// no secrets, the aws pod identity provider.
				ta := kids["TriggerAuthentication/"+n+"-trigger-auth"]
				if testenv.Str(ta, "spec", "podIdentity", "provider") != "aws" || testenv.Field(ta, "spec", "secretTargetRef") != nil {
					t.Errorf("TriggerAuthentication %s", testenv.MustJSON(ta["spec"]))
				}
				if !strings.Contains(testenv.MustJSON(testenv.Field(kids["ScaledObject/"+n], "spec", "triggers")), `"authenticationRef":{"name":"`+n+`-trigger-auth"}`) {
					t.Errorf("trigger does not use the TriggerAuthentication: %s", testenv.MustJSON(testenv.Field(kids["ScaledObject/"+n], "spec", "triggers")))
				}
			}},
		{file: "sqs-static.yaml", sqs: true, children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n, "ScaledObject/" + n, "TriggerAuthentication/" + n + "-trigger-auth"}
		},
			check: func(t *testing.T, n string, kids map[string]testenv.Obj) {
				// KEDA reads the keys where the sidecar has them, from
				// aws-creds.
				ta := testenv.MustJSON(kids["TriggerAuthentication/"+n+"-trigger-auth"])
				for _, p := range []string{"awsAccessKeyID", "awsSecretAccessKey", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "asya-sidecar"} {
					if !strings.Contains(ta, p) {
						t.Errorf("TriggerAuthentication lacks %s: %s", p, ta)
					}
				}
				if sidecar := testenv.MustJSON(kids["Deployment/"+n]); !strings.Contains(sidecar, `"secretKeyRef":{"key":"access-key-id","name":"aws-creds"}`) {
					t.Errorf("the sidecar does not read AWS_ACCESS_KEY_ID from aws-creds: %s", sidecar)
				}
			}},
		{file: "flat-1x.yaml", children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n, "ScaledObject/" + n, "TriggerAuthentication/" + n + "-trigger-auth"}
		},
			check: func(t *testing.T, n string, kids map[string]testenv.Obj) {
				pod := testenv.MustJSON(testenv.Field(kids["Deployment/"+n], "spec", "template", "spec"))
				for _, want := range []string{`"name":"ASYA_NAMESPACE","value":"` + actorNS + `"`, `"name":"ASYA_ACTOR_NAME","value":"text-analyzer"`,
					`"name":"fetch-model"`, `"name":"exporter"`, `"ASYA_RESILIENCY_POLICIES"`} {
					if !strings.Contains(pod, want) {
						t.Errorf("pod template lacks %s", want)
					}
				}
				if q := testenv.MustJSON(testenv.Field(kids["ScaledObject/"+n], "spec", "triggers")); !strings.Contains(q, `"queueName":"asya-`+actorNS+`-text-analyzer"`) {
					t.Errorf("triggers %s, want the queue asya-%s-text-analyzer", q, actorNS)
				}
			}},
		{file: "flat-0.5-sqs.yaml", sqs: true, children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n}
		},
			check: func(t *testing.T, n string, kids map[string]testenv.Obj) {
				if r := testenv.Field(kids["Deployment/"+n], "spec", "replicas"); fmt.Sprint(r) != "2" {
					t.Errorf("replicas = %v, want 2 (scaling off)", r)
				}
				if pod := testenv.MustJSON(kids["Deployment/"+n]); !strings.Contains(pod, `"name":"ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS","value":"4"`) {
					t.Errorf("sidecar lacks the 0.5 retry settings: %s", pod)
				}
			}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".yaml"), func(t *testing.T) {
			if c.sqs && !env.SQS {
				t.Skip("SQS emulator not listening")
			}
			a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", c.file), actorNS)
			if c.sqs {
				a = sqsName(a)
			}
			name := testenv.Str(a, "metadata", "name")
			passes := createActor(t, ctx, a)
			last := passes[len(passes)-1]
			kids := childrenOf(t, ctx, actorNS, name)
			if got, want := testenv.Keys(kids), c.children(name); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("children = %v, want %v; status: %s", got, want, testenv.MustJSON(last.Response.Status))
			}
			for k, o := range kids {
				if !strings.HasPrefix(testenv.Str(o, "metadata", "labels", "app.kubernetes.io/managed-by"), "asya-sync") {
					t.Errorf("%s: labels %v", k, testenv.Field(o, "metadata", "labels"))
				}
			}
			writes := 0
			for _, p := range passes {
				if p.StatusWritten {
					writes++
				}
			}
			// Creating (no workload observed) then the state with children:
			// two writes, plus one for observedGeneration at most, plus one
			// when a running KEDA judges the ScaledObject meanwhile.
			maxWrites := 3
			if _, scaled := kids["ScaledObject/"+name]; scaled && env.KEDA != nil {
				maxWrites++
			}
			if writes > maxWrites {
				t.Errorf("%d status writes to converge; want at most %d", writes, maxWrites)
			}
			a = testenv.GetActor(t, ctx, actorNS, name)
			if s := testenv.Str(a, "status", "status"); s == "" {
				t.Errorf("no status.status: %s", testenv.MustJSON(a["status"]))
			}
			if c.check != nil {
				c.check(t, name, kids)
			}
			// Steady state, once KEDA has said what it thinks of the
			// ScaledObject: another sync writes nothing and changes nothing.
			if _, ok := kids["ScaledObject/"+name]; ok {
				awaitKEDA(t, ctx, actorNS, name)
			}
			p, err := env.Driver.Reconcile(ctx, actorNS, name)
			if err != nil {
				t.Fatal(err)
			}
			if p.StatusWritten || len(p.Deleted) > 0 {
				t.Errorf("steady-state sync wrote status (%v) or deleted %v", p.StatusWritten, p.Deleted)
			}
		})
	}
}

// TestExamples runs the actors of examples/ through the documented steps:
// kubectl apply, then kubectl get asya.
func TestExamples(t *testing.T) {
	all := testenv.Examples(t)
	ctx := testenv.CtxFor(t, 2*time.Minute)
	testenv.EnsureNamespace(t, ctx, "default", true)
	for _, ex := range all {
		ns := testenv.Str(ex.Actor, "metadata", "namespace")
		if ns == "" {
			ns = "default"
		}
		name := testenv.Str(ex.Actor, "metadata", "name")
		t.Run(filepath.Base(ex.File)+"/"+name, func(t *testing.T) {
			out := testenv.Kubectl(t, "apply", "-f", ex.File)
			if !strings.Contains(out, "created") && !strings.Contains(out, "configured") && !strings.Contains(out, "unchanged") {
				t.Fatalf("kubectl apply: %s", out)
			}
			converge(t, ctx, ns, name)
			kids := childrenOf(t, ctx, ns, name)
			if len(kids) == 0 {
				t.Fatalf("no children; status %s", testenv.MustJSON(testenv.GetActor(t, ctx, ns, name)["status"]))
			}
			out = testenv.Kubectl(t, "get", "asya", "-n", ns)
			if _, rows := columns(out); rows[name] == nil {
				t.Errorf("kubectl get asya: no row for %s:\n%s", name, out)
			}
			t.Logf("kubectl get asya -n %s:\n%s", ns, out)
		})
	}
}

// TestAdmissionRejects checks what the CRD schema and its CEL rule reject
// before any hook runs.
func TestAdmissionRejects(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	testenv.EnsureNamespace(t, ctx, actorNS, true)
	base := func(name string) testenv.Obj {
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
		testenv.MapAt(a, "metadata")["name"] = name
		return a
	}
	cases := []struct {
		name   string
		mutate func(a testenv.Obj)
		want   string
	}{
		{"min-over-max", func(a testenv.Obj) {
			testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"enabled": true, "minReplicas": 5, "maxReplicas": 2}
		}, "minReplicas"},
		{"bad-kind", func(a testenv.Obj) { testenv.MapAt(a, "spec", "workload")["kind"] = "Job" }, "spec.workload.kind"},
		{"bad-pull-policy", func(a testenv.Obj) { testenv.MapAt(a, "spec")["sidecar"] = testenv.Obj{"imagePullPolicy": "Sometimes"} }, "spec.sidecar.imagePullPolicy"},
		{"bad-metric-type", func(a testenv.Obj) {
			testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"enabled": true, "advanced": testenv.Obj{"metricType": "Percent"}}
		}, "metricType"},
		{"negative-min", func(a testenv.Obj) { testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"minReplicas": -1} }, "spec.scaling.minReplicas"},
		{"zero-max", func(a testenv.Obj) { testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"maxReplicas": 0} }, "spec.scaling.maxReplicas"},
		{"zero-queue-length", func(a testenv.Obj) { testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"queueLength": 0} }, "spec.scaling.queueLength"},
		{"no-transport", func(a testenv.Obj) { delete(testenv.MapAt(a, "spec"), "transport") }, "spec.transport"},
		{"no-template", func(a testenv.Obj) { delete(testenv.MapAt(a, "spec", "workload"), "template") }, "spec.workload.template"},
		{"unknown-field", func(a testenv.Obj) { testenv.MapAt(a, "spec")["workers"] = 3 }, "workers"},
		{"mixed-shapes", func(a testenv.Obj) { testenv.MapAt(a, "spec")["replicas"] = 3 }, "mixes two shapes"},
		{"mixed-scaling", func(a testenv.Obj) {
			testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"enabled": true, "minReplicaCount": 1}
		}, "scaling.minReplicaCount"},
		{"flat-without-handler", func(a testenv.Obj) {
			testenv.MapAt(a)["spec"] = testenv.Obj{"actor": "flat", "image": "python:3.12-slim"}
		}, "spec.handler"},
		{"flat-actor-not-a-label", func(a testenv.Obj) {
			testenv.MapAt(a)["spec"] = testenv.Obj{"actor": "Not_A_Label", "image": "python:3.12-slim", "handler": "m.f"}
		}, "spec.actor"},
		{"nested-triggers-on-flat", func(a testenv.Obj) {
			testenv.MapAt(a)["spec"] = testenv.Obj{"actor": "flat", "image": "python:3.12-slim", "handler": "m.f",
				"scaling": testenv.Obj{"advanced": testenv.Obj{"triggers": []any{testenv.Obj{"type": "cron"}}}}}
		}, "advanced.triggers belong to the 0.3 shape"},
		{"claim-field-on-nested", func(a testenv.Obj) {
			testenv.MapAt(a, "spec")["compositionRef"] = testenv.Obj{"name": "asyncactor-rabbitmq"}
		}, "mixes two shapes"},
		{"flat-unknown-field", func(a testenv.Obj) {
			testenv.MapAt(a)["spec"] = testenv.Obj{"actor": "flat", "image": "python:3.12-slim", "handler": "m.f", "composition": "x"}
		}, "composition"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := base("reject-" + c.name)
			c.mutate(a)
			_, err := env.Cluster.Client.Create(ctx, a, false)
			if err == nil {
				env.Cluster.Client.Delete(ctx, testenv.ActorGVR(), actorNS, "reject-"+c.name)
				t.Fatalf("accepted; want a rejection naming %s", c.want)
			}
			ae, ok := err.(*testenv.APIError)
			if !ok || (ae.Code != 422 && ae.Code != 400) {
				t.Fatalf("error %v; want 422 Invalid", err)
			}
			if !strings.Contains(ae.Message, c.want) {
				t.Errorf("message %q does not name %s", ae.Message, c.want)
			}
		})
	}
}

// TestInvalidSpecInStatus covers what admission cannot see: the hook
// reports it in status, creates nothing for a new actor, and keeps the
// children of an actor that turns invalid exactly as they were.
func TestInvalidSpecInStatus(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	testenv.EnsureNamespace(t, ctx, actorNS, true)
	k := env.Cluster.Client

	t.Run("no-runtime-container", func(t *testing.T) {
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "no-runtime.yaml"), actorNS)
		createActor(t, ctx, a)
		got := testenv.GetActor(t, ctx, actorNS, "no-runtime")
		if s := testenv.Str(got, "status", "status"); s == "" || s == "Running" || s == "Creating" {
			t.Errorf("status.status = %q; want an error status", s)
		}
		if !strings.Contains(testenv.MustJSON(got["status"]), "asya-runtime") {
			t.Errorf("status does not name the missing asya-runtime container: %s", testenv.MustJSON(got["status"]))
		}
		if kids := childrenOf(t, ctx, actorNS, "no-runtime"); len(kids) != 0 {
			t.Errorf("invalid new actor got children %v", testenv.Keys(kids))
		}
	})

	t.Run("turns-invalid-keeps-children", func(t *testing.T) {
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
		testenv.MapAt(a, "metadata")["name"] = "turns-invalid"
		createActor(t, ctx, a)
		before := childrenOf(t, ctx, actorNS, "turns-invalid")
		if len(before) == 0 {
			t.Fatal("no children while valid")
		}
		// asya-runtime with a command of its own: admissible, invalid.
		patch := testenv.Obj{"spec": testenv.Obj{"workload": testenv.Obj{"template": testenv.Obj{"spec": testenv.Obj{"containers": []any{
			testenv.Obj{"name": "asya-runtime", "image": "python:3.12-slim", "command": []any{"python3", "-m", "mine"}},
		}}}}}}
		if _, err := k.Do(ctx, "PATCH", testenv.ActorGVR().Path(actorNS, "turns-invalid"), patch, "application/merge-patch+json"); err != nil {
			t.Fatal(err)
		}
		converge(t, ctx, actorNS, "turns-invalid")
		got := testenv.GetActor(t, ctx, actorNS, "turns-invalid")
		if !strings.Contains(testenv.MustJSON(got["status"]), "command") {
			t.Errorf("status does not name the command problem: %s", testenv.MustJSON(got["status"]))
		}
		after := childrenOf(t, ctx, actorNS, "turns-invalid")
		if strings.Join(testenv.Keys(after), " ") != strings.Join(testenv.Keys(before), " ") {
			t.Fatalf("children changed: %v -> %v", testenv.Keys(before), testenv.Keys(after))
		}
		for n, o := range after {
			if g1, g2 := testenv.Field(before[n], "metadata", "generation"), testenv.Field(o, "metadata", "generation"); fmt.Sprint(g1) != fmt.Sprint(g2) {
				t.Errorf("%s changed while the spec was invalid (generation %v -> %v)", n, g1, g2)
			}
		}
	})

	t.Run("disabled-transport", func(t *testing.T) {
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
		testenv.MapAt(a, "metadata")["name"] = "switched-off"
		testenv.MapAt(a, "spec")["transport"] = "switched-off"
		createActor(t, ctx, a)
		got := testenv.GetActor(t, ctx, actorNS, "switched-off")
		if s := testenv.Str(got, "status", "status"); s != "TransportError" {
			t.Errorf("status.status = %q, want TransportError: %s", s, testenv.MustJSON(got["status"]))
		}
		if testenv.Str(got, "status", "transportStatus") != "NotReady" {
			t.Errorf("transportStatus = %q, want NotReady", testenv.Str(got, "status", "transportStatus"))
		}
	})

	t.Run("missing-secret", func(t *testing.T) {
		ns := "e2e-no-secrets"
		testenv.EnsureNamespace(t, ctx, ns, false)
		a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "stateful.yaml"), ns)
		// A name of its own: another "stateful" on the same transport
		// would own the queue, and QueueConflict comes before ConfigError.
		testenv.MapAt(a, "metadata")["name"] = "stateful-no-secret"
		createActor(t, ctx, a)
		got := testenv.GetActor(t, ctx, ns, "stateful-no-secret")
		if s := testenv.Str(got, "status", "status"); s != "ConfigError" {
			t.Errorf("status.status = %q, want ConfigError: %s", s, testenv.MustJSON(got["status"]))
		}
		if !strings.Contains(testenv.MustJSON(got["status"]), "rabbitmq-secret") {
			t.Errorf("status does not name the missing Secret: %s", testenv.MustJSON(got["status"]))
		}
		// Read off the API server (watch.secrets read): once the Secrets
		// exist, the next sync finds them.
		testenv.EnsureNamespace(t, ctx, ns, true)
		converge(t, ctx, ns, "stateful-no-secret")
		got = testenv.GetActor(t, ctx, ns, "stateful-no-secret")
		if s := testenv.Str(got, "status", "status"); s == "ConfigError" || strings.Contains(testenv.MustJSON(got["status"]), "Secret") {
			t.Errorf("status.status = %q once the Secret exists: %s", s, testenv.MustJSON(got["status"]))
		}
	})
}

// TestScalingToggle turns KEDA scaling on and off on a running actor: the
// ScaledObject and TriggerAuthentication come and go, and the workload's
// replicas are left to the HPA only while scaling is on.
func TestScalingToggle(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	testenv.EnsureNamespace(t, ctx, actorNS, true)
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
	testenv.MapAt(a, "metadata")["name"] = "toggle"
	testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
	createActor(t, ctx, a)
	if kids := childrenOf(t, ctx, actorNS, "toggle"); kids["ScaledObject/toggle"] != nil {
		t.Fatal("ScaledObject with scaling off")
	}
	set := func(enabled bool) {
		patch := testenv.Obj{"spec": testenv.Obj{"scaling": testenv.Obj{"enabled": enabled, "minReplicas": 1, "maxReplicas": 4}}}
		if _, err := env.Cluster.Client.Do(ctx, "PATCH", testenv.ActorGVR().Path(actorNS, "toggle"), patch, "application/merge-patch+json"); err != nil {
			t.Fatal(err)
		}
		converge(t, ctx, actorNS, "toggle")
	}
	set(true)
	kids := childrenOf(t, ctx, actorNS, "toggle")
	so := kids["ScaledObject/toggle"]
	if so == nil || kids["TriggerAuthentication/toggle-trigger-auth"] == nil {
		t.Fatalf("scaling on: children %v", testenv.Keys(kids))
	}
	if fmt.Sprint(testenv.Field(so, "spec", "minReplicaCount")) != "1" || fmt.Sprint(testenv.Field(so, "spec", "maxReplicaCount")) != "4" {
		t.Errorf("ScaledObject bounds: %s", testenv.MustJSON(so["spec"]))
	}
	if testenv.Str(so, "spec", "scaleTargetRef", "name") != "toggle" {
		t.Errorf("scaleTargetRef: %s", testenv.MustJSON(testenv.Field(so, "spec", "scaleTargetRef")))
	}
	if mode := testenv.Str(testenv.GetActor(t, ctx, actorNS, "toggle"), "status", "scalingMode"); mode != "KEDA" {
		t.Errorf("scalingMode = %q with scaling on", mode)
	}
	set(false)
	kids = childrenOf(t, ctx, actorNS, "toggle")
	if kids["ScaledObject/toggle"] != nil || kids["TriggerAuthentication/toggle-trigger-auth"] != nil {
		t.Errorf("scaling off: KEDA objects remain: %v", testenv.Keys(kids))
	}
	if r := testenv.Field(kids["Deployment/toggle"], "spec", "replicas"); fmt.Sprint(r) != "2" {
		t.Errorf("scaling off: replicas = %v, want spec.workload.replicas 2", r)
	}
	if mode := testenv.Str(testenv.GetActor(t, ctx, actorNS, "toggle"), "status", "scalingMode"); mode != "Manual" {
		t.Errorf("scalingMode = %q with scaling off", mode)
	}
}
