//go:build e2e

package api

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

const operatorFinalizer = "asya.sh/finalizer"

// docBlock returns the shell block of doc that follows the marker
// <!-- e2e: name -->, so that a test runs what the documentation says. A
// block indented under a list item is returned without the indentation.
func docBlock(t *testing.T, doc, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, doc))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- e2e: " + regexp.QuoteMeta(name) + " -->\n( *)```sh\n(.*?)```")
	m := re.FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s has no block marked <!-- e2e: %s -->", doc, name)
	}
	indent := string(m[1])
	lines := strings.Split(string(m[2]), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(lines, "\n")
}

// runDocBlock runs a documented shell block with bash, with the built
// kubectl first on PATH, pointed at the test API server, and NS set (and
// vars, as NAME=value).
func runDocBlock(t *testing.T, doc, name, ns string, vars ...string) string {
	t.Helper()
	return runDocBlockIn(t, "", doc, name, ns, vars...)
}

// runDocBlockIn is runDocBlock in the directory dir, where the block reads
// and writes its files.
func runDocBlockIn(t *testing.T, dir, doc, name, ns string, vars ...string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", docBlock(t, doc, name))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+env.Bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+env.Cluster.Kubeconfig, "NS="+ns)
	cmd.Env = append(cmd.Env, vars...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s block %q: %v\n%s", doc, name, err, out)
	}
	return string(out)
}

// operatorState creates what the Asya operator (0.3.x) leaves for a
// RabbitMQ actor with scaling on: the actor with the operator's finalizer,
// its Deployment, ScaledObject, TriggerAuthentication and credential copy
// controlled by the actor, and the namespace's shared runtime ConfigMap.
func operatorState(t *testing.T, ctx context.Context, ns, name string) testenv.Obj {
	t.Helper()
	k := env.Cluster.Client
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	meta := testenv.MapAt(a, "metadata")
	meta["name"] = name
	meta["finalizers"] = []any{operatorFinalizer}
	testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
	testenv.MapAt(a, "spec")["scaling"] = testenv.Obj{"enabled": true}
	created, err := k.Create(ctx, a, false)
	if err != nil {
		t.Fatalf("create actor: %v", err)
	}
	created["apiVersion"], created["kind"] = testenv.ActorGVR().APIVersion, testenv.ActorGVR().Kind
	owned := func(kind, apiVersion, n string) testenv.Obj {
		return testenv.Obj{"apiVersion": apiVersion, "kind": kind, "metadata": testenv.Obj{
			"name": n, "namespace": ns,
			"labels": testenv.Obj{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "asya",
				"app.kubernetes.io/managed-by": "asya-operator"},
			"ownerReferences": []any{testenv.ControllerRef(created)},
		}}
	}
	selector := testenv.Obj{"app": name, "asya.sh/asya": name, "asya.sh/workload": "deployment"}
	probe := testenv.Obj{"exec": testenv.Obj{"command": []any{"sh", "-c",
		"test -S /var/run/asya/asya-runtime.sock && test -f /var/run/asya/runtime-ready"}}}
	deploy := owned("Deployment", "apps/v1", name)
	deploy["spec"] = testenv.Obj{
		"replicas": 1,
		"selector": testenv.Obj{"matchLabels": selector},
		"template": testenv.Obj{
			"metadata": testenv.Obj{"labels": testenv.Obj{"app": name, "asya.sh/asya": name, "asya.sh/workload": "deployment", "team": "e2e"}},
			"spec": testenv.Obj{
				"terminationGracePeriodSeconds": 20,
				"containers": []any{
					testenv.Obj{"name": "asya-runtime", "image": "python:3.12-slim",
						"command": []any{"python3", "/opt/asya/asya_runtime.py"},
						"env": []any{
							testenv.Obj{"name": "ASYA_HANDLER", "value": "handlers.echo"},
							testenv.Obj{"name": "ASYA_SOCKET_DIR", "value": "/var/run/asya"},
						},
						"volumeMounts": []any{
							testenv.Obj{"name": "socket-dir", "mountPath": "/var/run/asya"},
							testenv.Obj{"name": "tmp", "mountPath": "/tmp"},
							testenv.Obj{"name": "asya-runtime", "mountPath": "/opt/asya/asya_runtime.py", "subPath": "asya_runtime.py", "readOnly": true},
						},
						"startupProbe": probe, "readinessProbe": probe, "livenessProbe": probe,
					},
					testenv.Obj{"name": "asya-sidecar", "image": "ghcr.io/deliveryhero/asya-sidecar:0.3.10",
						"env": []any{
							testenv.Obj{"name": "ASYA_ACTOR_NAME", "value": name},
							testenv.Obj{"name": "ASYA_TRANSPORT", "value": "rabbitmq"},
							testenv.Obj{"name": "ASYA_RABBITMQ_HOST", "value": "127.0.0.1"},
							testenv.Obj{"name": "ASYA_RABBITMQ_PASSWORD", "valueFrom": testenv.Obj{"secretKeyRef": testenv.Obj{"name": name + "-transport-creds", "key": "password"}}},
							testenv.Obj{"name": "ASYA_SOCKET_DIR", "value": "/var/run/asya"},
						},
						"volumeMounts": []any{
							testenv.Obj{"name": "socket-dir", "mountPath": "/var/run/asya"},
							testenv.Obj{"name": "tmp", "mountPath": "/tmp"},
						},
					},
				},
				"volumes": []any{
					testenv.Obj{"name": "socket-dir", "emptyDir": testenv.Obj{}},
					testenv.Obj{"name": "tmp", "emptyDir": testenv.Obj{}},
					testenv.Obj{"name": "asya-runtime", "configMap": testenv.Obj{"name": "asya-runtime", "defaultMode": 0o755}},
				},
			},
		},
	}
	so := owned("ScaledObject", "keda.sh/v1alpha1", name)
	so["spec"] = testenv.Obj{
		"scaleTargetRef":  testenv.Obj{"name": name},
		"minReplicaCount": 0, "maxReplicaCount": 50, "pollingInterval": 10, "cooldownPeriod": 300,
		"triggers": []any{testenv.Obj{"type": "rabbitmq",
			"metadata":          testenv.Obj{"queueName": "asya-" + name, "mode": "QueueLength", "value": "5", "protocol": "amqp", "host": "amqp://127.0.0.1:5672"},
			"authenticationRef": testenv.Obj{"name": name + "-trigger-auth"},
		}},
	}
	ta := owned("TriggerAuthentication", "keda.sh/v1alpha1", name+"-trigger-auth")
	ta["spec"] = testenv.Obj{"secretTargetRef": []any{testenv.Obj{"parameter": "password", "name": name + "-transport-creds", "key": "password"}}}
	creds := owned("Secret", "v1", name+"-transport-creds")
	creds["stringData"] = testenv.Obj{"password": "guest", "username": "guest"}
	shared := testenv.Obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": testenv.Obj{
		"name": "asya-runtime", "namespace": ns,
		"labels": testenv.Obj{"app.kubernetes.io/name": "asya-runtime", "app.kubernetes.io/part-of": "asya"},
	}, "data": testenv.Obj{"asya_runtime.py": "# the operator's copy of the runtime\n"}}
	for _, o := range []testenv.Obj{deploy, so, ta, creds, shared} {
		if _, err := k.Create(ctx, o, false); err != nil {
			t.Fatalf("create %s %s: %v", testenv.Str(o, "kind"), testenv.Str(o, "metadata", "name"), err)
		}
	}
	return created
}

// queueWithMessages declares the actor's queue as the operator did
// (durable, no arguments, bound with routing key asya-X) and publishes n
// messages to it.
func queueWithMessages(t *testing.T, conn *amqp.Connection, actor string, n int) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	q := "asya-" + actor
	if err := ch.ExchangeDeclare("asya-e2e", "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q, q, "asya-e2e", false, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		testenv.Publish(t, conn, q)
	}
}

// TestMigrateFromOperator runs docs/migrate.md on the state the Asya
// operator leaves behind.
func TestMigrateFromOperator(t *testing.T) {
	if !env.Rabbit {
		testenv.Missing(t, "RabbitMQ", fmt.Errorf("not listening on 127.0.0.1:5672"))
	}
	ctx := testenv.CtxFor(t, 3*time.Minute)
	ns, name := "e2e-migrate", "migrated-"+env.RunID
	testenv.EnsureNamespace(t, ctx, ns, true)
	rabbit := testenv.Rabbit(t)
	const messages = 7
	queueWithMessages(t, rabbit, name, messages)
	t.Cleanup(func() {
		if testenv.QueueExists(t, rabbit, "asya-"+name) {
			testenv.DeleteQueue(t, rabbit, "asya-"+name)
		}
	})
	actor := operatorState(t, ctx, ns, name)
	uid := testenv.Str(actor, "metadata", "uid")
	k := env.Cluster.Client
	deployGVR, err := k.ByKind(ctx, "apps/v1", "Deployment")
	if err != nil {
		t.Fatal(err)
	}
	before, err := k.Get(ctx, deployGVR, ns, name)
	if err != nil {
		t.Fatal(err)
	}

	// Steps 1 and 2 (stop the operator, apply the CRD) have nothing to do
	// here: no operator runs, and the CRD is this repository's.
	runDocBlock(t, "docs/migrate.md", "label-children", ns)
	for _, child := range []string{"deployment/" + name, "scaledobjects.keda.sh/" + name, "triggerauthentications.keda.sh/" + name + "-trigger-auth"} {
		got := testenv.Kubectl(t, "get", child, "-n", ns, "-o", "jsonpath={.metadata.labels.controller-uid}")
		if got != uid {
			t.Errorf("%s: controller-uid label %q after step 3, want %q", child, got, uid)
		}
	}

	// Step 4: asya-sync syncs the actor, as Metacontroller runs it.
	converge(t, ctx, ns, name)
	a := testenv.GetActor(t, ctx, ns, name)
	if st := testenv.Str(a, "status", "status"); st == "Creating" || testenv.Str(a, "status", "transportStatus") != "Ready" {
		t.Fatalf("after the takeover: status %s", testenv.MustJSON(a["status"]))
	}
	if !testenv.HasFinalizer(a, env.Driver.Finalizer()) {
		t.Errorf("Metacontroller's finalizer missing: %v", testenv.Finalizers(a))
	}
	after, err := k.Get(ctx, deployGVR, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if testenv.Str(after, "metadata", "uid") != testenv.Str(before, "metadata", "uid") || testenv.ControllerUID(after) != uid {
		t.Fatalf("the operator's Deployment was not adopted: uid %s -> %s, controller %s",
			testenv.Str(before, "metadata", "uid"), testenv.Str(after, "metadata", "uid"), testenv.ControllerUID(after))
	}
	if !strings.Contains(testenv.MustJSON(testenv.Field(after, "spec", "template", "spec", "volumes")), `"name":"`+name+`-asya-runtime"`) {
		t.Errorf("Deployment still mounts the shared runtime ConfigMap: %s", testenv.MustJSON(testenv.Field(after, "spec", "template", "spec", "volumes")))
	}
	gen := func(o testenv.Obj) int64 {
		v, _ := testenv.Field(o, "metadata", "generation").(float64)
		return int64(v)
	}
	if gen(after) != gen(before)+1 {
		t.Errorf("Deployment generation %d -> %d: want exactly one template change (one rolling restart)", gen(before), gen(after))
	}
	converge(t, ctx, ns, name)
	if again, err := k.Get(ctx, deployGVR, ns, name); err != nil || gen(again) != gen(after) {
		t.Errorf("a further sync changed the Deployment again (generation %d -> %d, %v)", gen(after), gen(again), err)
	}
	kids := childrenOf(t, ctx, ns, name)
	for _, want := range []string{"Deployment/" + name, "ScaledObject/" + name, "TriggerAuthentication/" + name + "-trigger-auth", "ConfigMap/" + name + "-asya-runtime"} {
		if kids[want] == nil {
			t.Errorf("%s not among the actor's children after the takeover: %v", want, testenv.Keys(kids))
		}
	}
	testenv.WantMessages(t, rabbit, "asya-"+name, messages, "after the takeover")

	// Step 5: the operator's finalizer goes; Metacontroller's stays.
	runDocBlock(t, "docs/migrate.md", "drop-operator-finalizer", ns)
	a = testenv.GetActor(t, ctx, ns, name)
	if got := testenv.Finalizers(a); len(got) != 1 || got[0] != env.Driver.Finalizer() {
		t.Errorf("finalizers after step 5: %v, want only %s", got, env.Driver.Finalizer())
	}

	// Step 6: the shared ConfigMap goes; the actor's own stays.
	runDocBlock(t, "docs/migrate.md", "delete-shared-configmap", ns)
	cmGVR, _ := k.ByKind(ctx, "v1", "ConfigMap")
	if _, err := k.Get(ctx, cmGVR, ns, "asya-runtime"); !testenv.IsStatus(err, 404) {
		t.Errorf("shared ConfigMap asya-runtime after step 6: %v", err)
	}
	converge(t, ctx, ns, name)
	testenv.WantMessages(t, rabbit, "asya-"+name, messages, "at the end of the migration")

	// Deleting the migrated actor completes, and its queue goes with it.
	deleteAndFinalize(t, ctx, ns, name)
	if testenv.QueueExists(t, rabbit, "asya-"+name) {
		t.Errorf("queue asya-%s still there after the actor was deleted", name)
	}
}
