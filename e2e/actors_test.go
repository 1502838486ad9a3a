//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const actorNS = "e2e-actors"

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func actorGVR() gvr {
	return gvr{APIVersion: "asya.sh/v1alpha1", Resource: "asyncactors", Kind: "AsyncActor", Namespaced: true}
}

// ensureNamespace creates ns and the Secrets the test transports name.
// sqsName gives an SQS actor a name unique to this run.
func sqsName(a obj) obj {
	meta := mapAt(a, "metadata")
	meta["name"] = str(meta, "name") + "-" + env.runID
	return a
}

func ensureNamespace(t *testing.T, ctx context.Context, ns string, secrets bool) {
	t.Helper()
	k := env.cluster.client
	if _, err := k.apply(ctx, obj{"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": ns}}, "e2e"); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	if !secrets {
		return
	}
	for _, s := range []obj{
		{"apiVersion": "v1", "kind": "Secret", "metadata": obj{"name": "rabbitmq-secret", "namespace": ns},
			"stringData": obj{"password": "guest"}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": obj{"name": "aws-creds", "namespace": ns},
			"stringData": obj{"access-key-id": "e2e", "secret-access-key": "e2e"}},
	} {
		if _, err := k.apply(ctx, s, "e2e"); err != nil {
			t.Fatalf("secret: %v", err)
		}
	}
}

// loadActor reads an actor manifest and places it in ns.
func loadActor(t *testing.T, path, ns string) obj {
	t.Helper()
	docs, err := readYAMLDocs(path)
	var actors []obj
	for _, d := range docs {
		if str(d, "kind") == "AsyncActor" {
			actors = append(actors, d)
		}
	}
	if err != nil || len(actors) != 1 {
		t.Fatalf("%s: %v (%d AsyncActor documents, want 1)", path, err, len(actors))
	}
	a := actors[0]
	mapAt(a, "metadata")["namespace"] = ns
	return a
}

// createActor creates the actor and converges it; it returns the passes.
func createActor(t *testing.T, ctx context.Context, a obj) []*pass {
	t.Helper()
	if _, err := env.cluster.client.create(ctx, a, false); err != nil {
		t.Fatalf("create %s: %v", str(a, "metadata", "name"), err)
	}
	return converge(t, ctx, str(a, "metadata", "namespace"), str(a, "metadata", "name"))
}

func converge(t *testing.T, ctx context.Context, ns, name string) []*pass {
	t.Helper()
	start := time.Now()
	passes, err := env.driver.converge(ctx, ns, name, 8)
	if err != nil {
		t.Fatalf("converge %s/%s: %v", ns, name, err)
	}
	env.timed(fmt.Sprintf("converge %s/%s (%d passes)", ns, name, len(passes)), start)
	return passes
}

// childrenOf lists the objects the driver sees as the actor's children,
// as "Kind/name".
func childrenOf(t *testing.T, ctx context.Context, ns, name string) map[string]obj {
	t.Helper()
	a, err := env.cluster.client.get(ctx, actorGVR(), ns, name)
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	a["apiVersion"], a["kind"] = actorGVR().APIVersion, actorGVR().Kind
	groups, err := env.driver.claimChildren(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]obj{}
	for _, g := range groups {
		for _, o := range g.(obj) {
			out[str(o.(obj), "kind")+"/"+str(o.(obj), "metadata", "name")] = o.(obj)
		}
	}
	return out
}

func keys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func getActor(t *testing.T, ctx context.Context, ns, name string) obj {
	t.Helper()
	a, err := env.cluster.client.get(ctx, actorGVR(), ns, name)
	if err != nil {
		t.Fatalf("get actor %s/%s: %v", ns, name, err)
	}
	return a
}

func conditions(a obj) map[string]obj {
	out := map[string]obj{}
	list, _ := field(a, "status", "conditions").([]any)
	for _, c := range list {
		out[str(c.(obj), "type")] = c.(obj)
	}
	return out
}

// TestActorsChildrenAccepted creates one actor of every shape and checks
// that the children the hook returns are stored by the API server, with
// the CRD defaults, KEDA's schemas and core validation all applied.
func TestActorsChildrenAccepted(t *testing.T) {
	ctx := ctxFor(t, 3*time.Minute)
	ensureNamespace(t, ctx, actorNS, true)
	type want struct {
		file     string
		sqs      bool
		children func(name string) []string
		check    func(t *testing.T, name string, kids map[string]obj)
	}
	cases := []want{
		{file: "manual.yaml", children: func(n string) []string { return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n} },
			check: func(t *testing.T, n string, kids map[string]obj) {
				d := kids["Deployment/"+n]
				if r := field(d, "spec", "replicas"); fmt.Sprint(r) != "2" {
					t.Errorf("replicas = %v, want 2 (scaling off)", r)
				}
				if g := field(d, "spec", "template", "spec", "terminationGracePeriodSeconds"); fmt.Sprint(g) != "20" {
					t.Errorf("terminationGracePeriodSeconds = %v, want 20", g)
				}
				if l := str(d, "spec", "template", "metadata", "labels", "team"); l != "e2e" {
					t.Errorf("user pod label lost: %q", l)
				}
			}},
		{file: "stateful.yaml", children: func(n string) []string { return []string{"ConfigMap/" + n + "-asya-runtime", "StatefulSet/" + n} }},
		{file: "happy-end.yaml", children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n, "ScaledObject/" + n, "TriggerAuthentication/" + n + "-trigger-auth"}
		},
			check: func(t *testing.T, n string, kids map[string]obj) {
				if r := field(kids["Deployment/"+n], "spec", "replicas"); fmt.Sprint(r) != "<nil>" && fmt.Sprint(r) != "1" {
					// The API server defaults an omitted replicas to 1.
					t.Errorf("replicas = %v; with scaling on the hook must leave it to the HPA", r)
				}
				if !strings.Contains(mustJSON(field(kids["Deployment/"+n], "spec", "template", "spec", "containers")), `"ASYA_IS_END_ACTOR"`) {
					t.Errorf("sidecar has no ASYA_IS_END_ACTOR")
				}
			}},
		{file: "sqs-irsa.yaml", sqs: true, children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n, "ScaledObject/" + n, "ServiceAccount/asya-" + n, "TriggerAuthentication/" + n + "-trigger-auth"}
		},
			check: func(t *testing.T, n string, kids map[string]obj) {
				if sa := str(kids["Deployment/"+n], "spec", "template", "spec", "serviceAccountName"); sa != "asya-"+n {
					t.Errorf("serviceAccountName = %q", sa)
				}
				if arn := str(kids["ServiceAccount/asya-"+n], "metadata", "annotations", "eks.amazonaws.com/role-arn"); arn == "" {
					t.Errorf("ServiceAccount without role annotation")
				}
				// KEDA reads the queue with the workload's IRSA identity:
				// no secrets, the aws pod identity provider.
				ta := kids["TriggerAuthentication/"+n+"-trigger-auth"]
				if str(ta, "spec", "podIdentity", "provider") != "aws" || field(ta, "spec", "secretTargetRef") != nil {
					t.Errorf("TriggerAuthentication %s", mustJSON(ta["spec"]))
				}
				if !strings.Contains(mustJSON(field(kids["ScaledObject/"+n], "spec", "triggers")), `"authenticationRef":{"name":"`+n+`-trigger-auth"}`) {
					t.Errorf("trigger does not use the TriggerAuthentication: %s", mustJSON(field(kids["ScaledObject/"+n], "spec", "triggers")))
				}
			}},
		{file: "sqs-static.yaml", sqs: true, children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n, "ScaledObject/" + n, "TriggerAuthentication/" + n + "-trigger-auth"}
		},
			check: func(t *testing.T, n string, kids map[string]obj) {
				// KEDA reads the keys where the sidecar has them, from
				// aws-creds.
				ta := mustJSON(kids["TriggerAuthentication/"+n+"-trigger-auth"])
				for _, p := range []string{"awsAccessKeyID", "awsSecretAccessKey", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "asya-sidecar"} {
					if !strings.Contains(ta, p) {
						t.Errorf("TriggerAuthentication lacks %s: %s", p, ta)
					}
				}
				if sidecar := mustJSON(kids["Deployment/"+n]); !strings.Contains(sidecar, `"secretKeyRef":{"key":"access-key-id","name":"aws-creds"}`) {
					t.Errorf("the sidecar does not read AWS_ACCESS_KEY_ID from aws-creds: %s", sidecar)
				}
			}},
		{file: "flat-1x.yaml", children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n, "ScaledObject/" + n, "TriggerAuthentication/" + n + "-trigger-auth"}
		},
			check: func(t *testing.T, n string, kids map[string]obj) {
				pod := mustJSON(field(kids["Deployment/"+n], "spec", "template", "spec"))
				for _, want := range []string{`"name":"ASYA_NAMESPACE","value":"` + actorNS + `"`, `"name":"ASYA_ACTOR_NAME","value":"text-analyzer"`,
					`"name":"fetch-model"`, `"name":"exporter"`, `"ASYA_RESILIENCY_POLICIES"`} {
					if !strings.Contains(pod, want) {
						t.Errorf("pod template lacks %s", want)
					}
				}
				if q := mustJSON(field(kids["ScaledObject/"+n], "spec", "triggers")); !strings.Contains(q, `"queueName":"asya-`+actorNS+`-text-analyzer"`) {
					t.Errorf("triggers %s, want the queue asya-%s-text-analyzer", q, actorNS)
				}
			}},
		{file: "flat-0.5-sqs.yaml", sqs: true, children: func(n string) []string {
			return []string{"ConfigMap/" + n + "-asya-runtime", "Deployment/" + n}
		},
			check: func(t *testing.T, n string, kids map[string]obj) {
				if r := field(kids["Deployment/"+n], "spec", "replicas"); fmt.Sprint(r) != "2" {
					t.Errorf("replicas = %v, want 2 (scaling off)", r)
				}
				if pod := mustJSON(kids["Deployment/"+n]); !strings.Contains(pod, `"name":"ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS","value":"4"`) {
					t.Errorf("sidecar lacks the 0.5 retry settings: %s", pod)
				}
			}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".yaml"), func(t *testing.T) {
			if c.sqs && !env.sqs {
				t.Skip("SQS emulator not listening")
			}
			a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", c.file), actorNS)
			if c.sqs {
				a = sqsName(a)
			}
			name := str(a, "metadata", "name")
			passes := createActor(t, ctx, a)
			last := passes[len(passes)-1]
			kids := childrenOf(t, ctx, actorNS, name)
			if got, want := keys(kids), c.children(name); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("children = %v, want %v; status: %s", got, want, mustJSON(last.Response.Status))
			}
			for k, o := range kids {
				if !strings.HasPrefix(str(o, "metadata", "labels", "app.kubernetes.io/managed-by"), "asya-sync") {
					t.Errorf("%s: labels %v", k, field(o, "metadata", "labels"))
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
			if _, scaled := kids["ScaledObject/"+name]; scaled && env.keda != nil {
				maxWrites++
			}
			if writes > maxWrites {
				t.Errorf("%d status writes to converge; want at most %d", writes, maxWrites)
			}
			a = getActor(t, ctx, actorNS, name)
			if s := str(a, "status", "status"); s == "" {
				t.Errorf("no status.status: %s", mustJSON(a["status"]))
			}
			if c.check != nil {
				c.check(t, name, kids)
			}
			// Steady state, once KEDA has said what it thinks of the
			// ScaledObject: another sync writes nothing and changes nothing.
			if _, ok := kids["ScaledObject/"+name]; ok {
				awaitKEDA(t, ctx, actorNS, name)
			}
			p, err := env.driver.reconcile(ctx, actorNS, name)
			if err != nil {
				t.Fatal(err)
			}
			if p.StatusWritten || len(p.Deleted) > 0 {
				t.Errorf("steady-state sync wrote status (%v) or deleted %v", p.StatusWritten, p.Deleted)
			}
		})
	}
}

// example is an AsyncActor of examples/ and the file it is in.
type example struct {
	file  string
	actor obj
}

// examples lists the AsyncActors of examples/, and fails the test when
// there are none: a test of the examples that finds none tests nothing.
func examples(t *testing.T) []example {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.root, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	for _, f := range files {
		docs, err := readYAMLDocs(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if str(d, "kind") == "AsyncActor" {
				out = append(out, example{f, d})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no AsyncActor in %s", filepath.Join(env.root, "examples"))
	}
	return out
}

// TestExamples runs the actors of examples/ through the documented steps:
// kubectl apply, then kubectl get asya.
func TestExamples(t *testing.T) {
	all := examples(t)
	ctx := ctxFor(t, 2*time.Minute)
	ensureNamespace(t, ctx, "default", true)
	for _, ex := range all {
		ns := str(ex.actor, "metadata", "namespace")
		if ns == "" {
			ns = "default"
		}
		name := str(ex.actor, "metadata", "name")
		t.Run(filepath.Base(ex.file)+"/"+name, func(t *testing.T) {
			out := kubectl(t, "apply", "-f", ex.file)
			if !strings.Contains(out, "created") && !strings.Contains(out, "configured") && !strings.Contains(out, "unchanged") {
				t.Fatalf("kubectl apply: %s", out)
			}
			converge(t, ctx, ns, name)
			kids := childrenOf(t, ctx, ns, name)
			if len(kids) == 0 {
				t.Fatalf("no children; status %s", mustJSON(getActor(t, ctx, ns, name)["status"]))
			}
			out = kubectl(t, "get", "asya", "-n", ns)
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
	ctx := ctxFor(t, time.Minute)
	ensureNamespace(t, ctx, actorNS, true)
	base := func(name string) obj {
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
		mapAt(a, "metadata")["name"] = name
		return a
	}
	cases := []struct {
		name   string
		mutate func(a obj)
		want   string
	}{
		{"min-over-max", func(a obj) {
			mapAt(a, "spec")["scaling"] = obj{"enabled": true, "minReplicas": 5, "maxReplicas": 2}
		}, "minReplicas"},
		{"bad-kind", func(a obj) { mapAt(a, "spec", "workload")["kind"] = "Job" }, "spec.workload.kind"},
		{"bad-pull-policy", func(a obj) { mapAt(a, "spec")["sidecar"] = obj{"imagePullPolicy": "Sometimes"} }, "spec.sidecar.imagePullPolicy"},
		{"bad-metric-type", func(a obj) {
			mapAt(a, "spec")["scaling"] = obj{"enabled": true, "advanced": obj{"metricType": "Percent"}}
		}, "metricType"},
		{"negative-min", func(a obj) { mapAt(a, "spec")["scaling"] = obj{"minReplicas": -1} }, "spec.scaling.minReplicas"},
		{"zero-max", func(a obj) { mapAt(a, "spec")["scaling"] = obj{"maxReplicas": 0} }, "spec.scaling.maxReplicas"},
		{"zero-queue-length", func(a obj) { mapAt(a, "spec")["scaling"] = obj{"queueLength": 0} }, "spec.scaling.queueLength"},
		{"no-transport", func(a obj) { delete(mapAt(a, "spec"), "transport") }, "spec.transport"},
		{"no-template", func(a obj) { delete(mapAt(a, "spec", "workload"), "template") }, "spec.workload.template"},
		{"unknown-field", func(a obj) { mapAt(a, "spec")["workers"] = 3 }, "workers"},
		{"mixed-shapes", func(a obj) { mapAt(a, "spec")["replicas"] = 3 }, "mixes two shapes"},
		{"mixed-scaling", func(a obj) {
			mapAt(a, "spec")["scaling"] = obj{"enabled": true, "minReplicaCount": 1}
		}, "scaling.minReplicaCount"},
		{"flat-without-handler", func(a obj) {
			mapAt(a)["spec"] = obj{"actor": "flat", "image": "python:3.12-slim"}
		}, "spec.handler"},
		{"flat-actor-not-a-label", func(a obj) {
			mapAt(a)["spec"] = obj{"actor": "Not_A_Label", "image": "python:3.12-slim", "handler": "m.f"}
		}, "spec.actor"},
		{"nested-triggers-on-flat", func(a obj) {
			mapAt(a)["spec"] = obj{"actor": "flat", "image": "python:3.12-slim", "handler": "m.f",
				"scaling": obj{"advanced": obj{"triggers": []any{obj{"type": "cron"}}}}}
		}, "advanced.triggers belong to the 0.3 shape"},
		{"claim-field-on-nested", func(a obj) { mapAt(a, "spec")["compositionRef"] = obj{"name": "asyncactor-rabbitmq"} }, "mixes two shapes"},
		{"flat-unknown-field", func(a obj) {
			mapAt(a)["spec"] = obj{"actor": "flat", "image": "python:3.12-slim", "handler": "m.f", "composition": "x"}
		}, "composition"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := base("reject-" + c.name)
			c.mutate(a)
			_, err := env.cluster.client.create(ctx, a, false)
			if err == nil {
				env.cluster.client.delete(ctx, actorGVR(), actorNS, "reject-"+c.name)
				t.Fatalf("accepted; want a rejection naming %s", c.want)
			}
			ae, ok := err.(*apiError)
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
	ctx := ctxFor(t, 2*time.Minute)
	ensureNamespace(t, ctx, actorNS, true)
	k := env.cluster.client

	t.Run("no-runtime-container", func(t *testing.T) {
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "no-runtime.yaml"), actorNS)
		createActor(t, ctx, a)
		got := getActor(t, ctx, actorNS, "no-runtime")
		if s := str(got, "status", "status"); s == "" || s == "Running" || s == "Creating" {
			t.Errorf("status.status = %q; want an error status", s)
		}
		if !strings.Contains(mustJSON(got["status"]), "asya-runtime") {
			t.Errorf("status does not name the missing asya-runtime container: %s", mustJSON(got["status"]))
		}
		if kids := childrenOf(t, ctx, actorNS, "no-runtime"); len(kids) != 0 {
			t.Errorf("invalid new actor got children %v", keys(kids))
		}
	})

	t.Run("turns-invalid-keeps-children", func(t *testing.T) {
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
		mapAt(a, "metadata")["name"] = "turns-invalid"
		createActor(t, ctx, a)
		before := childrenOf(t, ctx, actorNS, "turns-invalid")
		if len(before) == 0 {
			t.Fatal("no children while valid")
		}
		// asya-runtime with a command of its own: admissible, invalid.
		patch := obj{"spec": obj{"workload": obj{"template": obj{"spec": obj{"containers": []any{
			obj{"name": "asya-runtime", "image": "python:3.12-slim", "command": []any{"python3", "-m", "mine"}},
		}}}}}}
		if _, err := k.do(ctx, "PATCH", actorGVR().path(actorNS, "turns-invalid"), patch, "application/merge-patch+json"); err != nil {
			t.Fatal(err)
		}
		converge(t, ctx, actorNS, "turns-invalid")
		got := getActor(t, ctx, actorNS, "turns-invalid")
		if !strings.Contains(mustJSON(got["status"]), "command") {
			t.Errorf("status does not name the command problem: %s", mustJSON(got["status"]))
		}
		after := childrenOf(t, ctx, actorNS, "turns-invalid")
		if strings.Join(keys(after), " ") != strings.Join(keys(before), " ") {
			t.Fatalf("children changed: %v -> %v", keys(before), keys(after))
		}
		for n, o := range after {
			if g1, g2 := field(before[n], "metadata", "generation"), field(o, "metadata", "generation"); fmt.Sprint(g1) != fmt.Sprint(g2) {
				t.Errorf("%s changed while the spec was invalid (generation %v -> %v)", n, g1, g2)
			}
		}
	})

	t.Run("disabled-transport", func(t *testing.T) {
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
		mapAt(a, "metadata")["name"] = "switched-off"
		mapAt(a, "spec")["transport"] = "switched-off"
		createActor(t, ctx, a)
		got := getActor(t, ctx, actorNS, "switched-off")
		if s := str(got, "status", "status"); s != "TransportError" {
			t.Errorf("status.status = %q, want TransportError: %s", s, mustJSON(got["status"]))
		}
		if str(got, "status", "transportStatus") != "NotReady" {
			t.Errorf("transportStatus = %q, want NotReady", str(got, "status", "transportStatus"))
		}
	})

	t.Run("missing-secret", func(t *testing.T) {
		ns := "e2e-no-secrets"
		ensureNamespace(t, ctx, ns, false)
		a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "stateful.yaml"), ns)
		// A name of its own: another "stateful" on the same transport
		// would own the queue, and QueueConflict comes before ConfigError.
		mapAt(a, "metadata")["name"] = "stateful-no-secret"
		createActor(t, ctx, a)
		got := getActor(t, ctx, ns, "stateful-no-secret")
		if s := str(got, "status", "status"); s != "ConfigError" {
			t.Errorf("status.status = %q, want ConfigError: %s", s, mustJSON(got["status"]))
		}
		if !strings.Contains(mustJSON(got["status"]), "rabbitmq-secret") {
			t.Errorf("status does not name the missing Secret: %s", mustJSON(got["status"]))
		}
	})
}

// TestScalingToggle turns KEDA scaling on and off on a running actor: the
// ScaledObject and TriggerAuthentication come and go, and the workload's
// replicas are left to the HPA only while scaling is on.
func TestScalingToggle(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	ensureNamespace(t, ctx, actorNS, true)
	a := loadActor(t, filepath.Join(env.root, "e2e", "testdata", "actors", "manual.yaml"), actorNS)
	mapAt(a, "metadata")["name"] = "toggle"
	mapAt(a, "spec")["transport"] = "rabbitmq"
	createActor(t, ctx, a)
	if kids := childrenOf(t, ctx, actorNS, "toggle"); kids["ScaledObject/toggle"] != nil {
		t.Fatal("ScaledObject with scaling off")
	}
	set := func(enabled bool) {
		patch := obj{"spec": obj{"scaling": obj{"enabled": enabled, "minReplicas": 1, "maxReplicas": 4}}}
		if _, err := env.cluster.client.do(ctx, "PATCH", actorGVR().path(actorNS, "toggle"), patch, "application/merge-patch+json"); err != nil {
			t.Fatal(err)
		}
		converge(t, ctx, actorNS, "toggle")
	}
	set(true)
	kids := childrenOf(t, ctx, actorNS, "toggle")
	so := kids["ScaledObject/toggle"]
	if so == nil || kids["TriggerAuthentication/toggle-trigger-auth"] == nil {
		t.Fatalf("scaling on: children %v", keys(kids))
	}
	if fmt.Sprint(field(so, "spec", "minReplicaCount")) != "1" || fmt.Sprint(field(so, "spec", "maxReplicaCount")) != "4" {
		t.Errorf("ScaledObject bounds: %s", mustJSON(so["spec"]))
	}
	if str(so, "spec", "scaleTargetRef", "name") != "toggle" {
		t.Errorf("scaleTargetRef: %s", mustJSON(field(so, "spec", "scaleTargetRef")))
	}
	if mode := str(getActor(t, ctx, actorNS, "toggle"), "status", "scalingMode"); mode != "KEDA" {
		t.Errorf("scalingMode = %q with scaling on", mode)
	}
	set(false)
	kids = childrenOf(t, ctx, actorNS, "toggle")
	if kids["ScaledObject/toggle"] != nil || kids["TriggerAuthentication/toggle-trigger-auth"] != nil {
		t.Errorf("scaling off: KEDA objects remain: %v", keys(kids))
	}
	if r := field(kids["Deployment/toggle"], "spec", "replicas"); fmt.Sprint(r) != "2" {
		t.Errorf("scaling off: replicas = %v, want spec.workload.replicas 2", r)
	}
	if mode := str(getActor(t, ctx, actorNS, "toggle"), "status", "scalingMode"); mode != "Manual" {
		t.Errorf("scalingMode = %q with scaling off", mode)
	}
}
