//go:build e2e

package api

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestExampleValues installs the chart with each examples/values-*.yaml as
// its header says (with the broker addresses of this environment set on
// top), then runs an actor through its lifecycle on the configuration the
// chart rendered: the service starts with it, the actor syncs to Ready
// with the children that setup needs, and deleting it completes and takes
// its queue.
func TestExampleValues(t *testing.T) {
	rabbitSet := []string{
		"config.transports.rabbitmq.config.host=127.0.0.1",
		"config.transports.rabbitmq.config.username=guest",
		"config.transports.rabbitmq.config.managementURL=http://127.0.0.1:15672",
	}
	for _, tc := range []struct {
		release    string
		files      []string
		transport  string
		up         bool
		set        []string // where this environment's brokers are
		serviceEnv []string // the service's own credentials (IRSA in a cluster)
		children   []string // the kinds of the actor's children
	}{
		{
			release: "ex-rabbitmq", files: []string{"values-rabbitmq.yaml"}, transport: "rabbitmq", up: env.Rabbit,
			set:      rabbitSet,
			children: []string{"ConfigMap", "Deployment", "ScaledObject", "TriggerAuthentication"},
		},
		{
			// Layered over a transport's values: no ConfigMap child.
			release: "ex-large-fleet", files: []string{"values-rabbitmq.yaml", "values-large-fleet.yaml"}, transport: "rabbitmq", up: env.Rabbit,
			set:      rabbitSet,
			children: []string{"Deployment", "ScaledObject", "TriggerAuthentication"},
		},
		{
			release: "ex-sqs", files: []string{"values-sqs-irsa.yaml"}, transport: "sqs", up: env.SQS,
			set: []string{
				"config.transports.sqs.config.region=us-east-1",
				"config.transports.sqs.config.accountId=000000000000",
				"config.transports.sqs.config.endpoint=" + env.SQSURL,
			},
			serviceEnv: []string{"AWS_ACCESS_KEY_ID=e2e", "AWS_SECRET_ACCESS_KEY=e2e", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"},
			children:   []string{"ConfigMap", "Deployment", "ScaledObject", "ServiceAccount", "TriggerAuthentication"},
		},
	} {
		t.Run(strings.Join(tc.files, "+"), func(t *testing.T) {
			if !tc.up {
				testenv.Missing(t, tc.transport+" broker", fmt.Errorf("not listening"))
			}
			ctx := testenv.CtxFor(t, 3*time.Minute)
			k := env.Cluster.Client
			release, ns := tc.release, "e2e-values-"+tc.release
			testenv.EnsureNamespace(t, ctx, ns, false)

			// The Secrets the header asks for, in this namespace, with the
			// test broker's password.
			if tc.transport == "rabbitmq" {
				docs, err := testenv.ReadYAMLDocs(filepath.Join(env.Root, "examples", "rabbitmq-secrets.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range docs {
					if testenv.Str(d, "kind") != "Secret" {
						continue
					}
					testenv.MapAt(d, "metadata")["namespace"] = ns
					testenv.MapAt(d, "stringData")["password"] = "guest"
					if _, err := k.Apply(ctx, d, "e2e"); err != nil {
						t.Fatalf("Secret %s: %v", testenv.Str(d, "metadata", "name"), err)
					}
				}
			}

			// Another CompositeController name: manifests/ already installed
			// the one called asya-sync.
			args := []string{"install", release, "./chart", "-n", ns, "--set", "compositeController.name=asya-sync-" + release}
			for _, f := range tc.files {
				args = append(args, "-f", "examples/"+f)
			}
			for _, s := range tc.set {
				args = append(args, "--set-string", s)
			}
			if _, err := env.Helm(args...); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := env.Helm("uninstall", release, "-n", ns, "--wait", "--timeout", "60s"); err != nil {
					t.Error(err)
				}
			})

			// The service, on the configuration the chart installed, with the
			// mounted password file replaced by the Secret's content.
			cmGVR, _ := k.ByKind(ctx, "v1", "ConfigMap")
			cms, err := k.List(ctx, cmGVR, ns, "app.kubernetes.io/instance="+release)
			if err != nil || len(cms) != 1 {
				t.Fatalf("the release's ConfigMap: %v (%d found)", err, len(cms))
			}
			cfg := testenv.Str(cms[0], "data", "config.yaml")
			if tc.transport == "rabbitmq" {
				secretGVR, _ := k.ByKind(ctx, "v1", "Secret")
				s, err := k.Get(ctx, secretGVR, ns, "asya-sync-rabbitmq")
				if err != nil {
					t.Fatal(err)
				}
				pw := filepath.Join(t.TempDir(), "password")
				if err := os.WriteFile(pw, []byte(decodeSecret(t, testenv.Str(s, "data", "password"))), 0o600); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(cfg, "/etc/asya-sync/rabbitmq/password") {
					t.Fatalf("config.yaml does not read the mounted password:\n%s", cfg)
				}
				cfg = strings.ReplaceAll(cfg, "/etc/asya-sync/rabbitmq/password", pw)
			}
			hookURL := testenv.StartExtraService(t, release, env.SyncBin, cfg, tc.serviceEnv)

			ccGVR, _ := k.ByKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
			cc, err := k.Get(ctx, ccGVR, "", "asya-sync-"+release)
			if err != nil {
				t.Fatal(err)
			}
			// The extra service runs on loopback over plain HTTP (a TLS
			// setting does not apply to an http URL).
			d, err := testenv.NewDriver(ctx, k, testenv.AtBaseURL(cc, hookURL))
			if err != nil {
				t.Fatal(err)
			}

			a := testenv.LoadActor(t, filepath.Join(env.Root, "examples", "hello-actor.yaml"), ns)
			name := "values-" + tc.release + "-" + env.RunID
			testenv.MapAt(a, "metadata")["name"] = name
			testenv.MapAt(a, "spec")["transport"] = tc.transport
			if _, err := k.Create(ctx, a, false); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Converge(ctx, ns, name, 8); err != nil {
				t.Fatal(err)
			}
			got := testenv.GetActor(t, ctx, ns, name)
			if testenv.Str(got, "status", "transportStatus") != "Ready" {
				t.Fatalf("actor status: %s", testenv.MustJSON(got["status"]))
			}
			got["apiVersion"], got["kind"] = testenv.ActorGVR().APIVersion, testenv.ActorGVR().Kind
			groups, err := d.ClaimChildren(ctx, got)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, g := range groups {
				for _, c := range g.(testenv.Obj) {
					kinds = append(kinds, testenv.Str(c.(testenv.Obj), "kind"))
				}
			}
			slices.Sort(kinds)
			if diff := cmp.Diff(tc.children, kinds); diff != "" {
				t.Errorf("children's kinds (-want +got):\n%s", diff)
			}

			if err := k.Delete(ctx, testenv.ActorGVR(), ns, name); err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				p, err := d.Reconcile(ctx, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				if p.Gone {
					break
				}
				if i == 10 {
					t.Fatalf("actor not finalized after %d passes: %s", i, testenv.MustJSON(p.Response.Status))
				}
			}
			queue := "asya-" + name
			switch tc.transport {
			case "rabbitmq":
				if testenv.QueueExists(t, testenv.Rabbit(t), queue) {
					t.Errorf("queue %s left after the actor was deleted", queue)
				}
			case "sqs":
				if sqsQueueExists(t, ctx, queue) {
					t.Errorf("queue %s left after the actor was deleted", queue)
				}
			}
		})
	}
}

// TestExampleValuesOnlyTheirTransports: each transport values file leaves
// in the service configuration only the transports it names, not the
// chart's default RabbitMQ transport; an actor on a transport the file
// does not configure is told so, rather than failing to reach a broker.
func TestExampleValuesOnlyTheirTransports(t *testing.T) {
	for file, want := range map[string][]string{
		"values-rabbitmq.yaml": {"rabbitmq"},
		"values-sqs-irsa.yaml": {"sqs"},
	} {
		t.Run(file, func(t *testing.T) {
			objs := renderChart(t, "asya-system", "-f", "examples/"+file)
			cfg := testenv.Str(objs["ConfigMap/asya-sync"], "data", "config.yaml")
			var parsed struct {
				Transports map[string]any `json:"transports"`
			}
			if err := yaml.Unmarshal([]byte(cfg), &parsed); err != nil {
				t.Fatalf("config.yaml: %v\n%s", err, cfg)
			}
			if got := testenv.Keys(parsed.Transports); !slices.Equal(got, want) {
				t.Errorf("transports %v, want %v:\n%s", got, want, cfg)
			}
			if slices.Contains(want, "rabbitmq") {
				return
			}
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(env.SyncBin, "render", "-f", filepath.Join(env.Root, "examples", "hello-actor.yaml"), "--config", path)
			cmd.Env = append(os.Environ(), "ASYA_SYNC_CONFIG=")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), `transport "rabbitmq" is not configured`) {
				t.Errorf("a RabbitMQ actor on %s: %v\n%s", file, err, out)
			}
		})
	}
}

func decodeSecret(t *testing.T, v string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		t.Fatalf("secret value: %v", err)
	}
	return string(b)
}
