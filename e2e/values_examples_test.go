//go:build e2e

package e2e

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
			release: "ex-rabbitmq", files: []string{"values-rabbitmq.yaml"}, transport: "rabbitmq", up: env.rabbit,
			set:      rabbitSet,
			children: []string{"ConfigMap", "Deployment", "ScaledObject", "TriggerAuthentication"},
		},
		{
			// Layered over a transport's values: no ConfigMap child.
			release: "ex-large-fleet", files: []string{"values-rabbitmq.yaml", "values-large-fleet.yaml"}, transport: "rabbitmq", up: env.rabbit,
			set:      rabbitSet,
			children: []string{"Deployment", "ScaledObject", "TriggerAuthentication"},
		},
		{
			release: "ex-sqs", files: []string{"values-sqs-irsa.yaml"}, transport: "sqs", up: env.sqs,
			set: []string{
				"config.transports.sqs.config.region=us-east-1",
				"config.transports.sqs.config.accountId=000000000000",
				"config.transports.sqs.config.endpoint=" + env.sqsURL,
			},
			serviceEnv: []string{"AWS_ACCESS_KEY_ID=e2e", "AWS_SECRET_ACCESS_KEY=e2e", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"},
			children:   []string{"ConfigMap", "Deployment", "ScaledObject", "ServiceAccount", "TriggerAuthentication"},
		},
	} {
		t.Run(strings.Join(tc.files, "+"), func(t *testing.T) {
			if !tc.up {
				testenv.Missing(t, tc.transport+" broker", fmt.Errorf("not listening"))
			}
			ctx := ctxFor(t, 3*time.Minute)
			k := env.cluster.client
			release, ns := tc.release, "e2e-values-"+tc.release
			ensureNamespace(t, ctx, ns, false)

			// The Secrets the header asks for, in this namespace, with the
			// test broker's password.
			if tc.transport == "rabbitmq" {
				docs, err := readYAMLDocs(filepath.Join(env.root, "examples", "rabbitmq-secrets.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range docs {
					if str(d, "kind") != "Secret" {
						continue
					}
					mapAt(d, "metadata")["namespace"] = ns
					mapAt(d, "stringData")["password"] = "guest"
					if _, err := k.apply(ctx, d, "e2e"); err != nil {
						t.Fatalf("Secret %s: %v", str(d, "metadata", "name"), err)
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
			if _, err := env.helm(args...); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := env.helm("uninstall", release, "-n", ns, "--wait", "--timeout", "60s"); err != nil {
					t.Error(err)
				}
			})

			// The service, on the configuration the chart installed, with the
			// mounted password file replaced by the Secret's content.
			cmGVR, _ := k.byKind(ctx, "v1", "ConfigMap")
			cms, err := k.list(ctx, cmGVR, ns, "app.kubernetes.io/instance="+release)
			if err != nil || len(cms) != 1 {
				t.Fatalf("the release's ConfigMap: %v (%d found)", err, len(cms))
			}
			cfg := str(cms[0], "data", "config.yaml")
			if tc.transport == "rabbitmq" {
				secretGVR, _ := k.byKind(ctx, "v1", "Secret")
				s, err := k.get(ctx, secretGVR, ns, "asya-sync-rabbitmq")
				if err != nil {
					t.Fatal(err)
				}
				pw := filepath.Join(t.TempDir(), "password")
				if err := os.WriteFile(pw, []byte(decodeSecret(t, str(s, "data", "password"))), 0o600); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(cfg, "/etc/asya-sync/rabbitmq/password") {
					t.Fatalf("config.yaml does not read the mounted password:\n%s", cfg)
				}
				cfg = strings.ReplaceAll(cfg, "/etc/asya-sync/rabbitmq/password", pw)
			}
			hookURL := startExtraService(t, release, env.syncBin, cfg, tc.serviceEnv)

			ccGVR, _ := k.byKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
			cc, err := k.get(ctx, ccGVR, "", "asya-sync-"+release)
			if err != nil {
				t.Fatal(err)
			}
			// The extra service runs on loopback over plain HTTP (a TLS
			// setting does not apply to an http URL).
			d, err := newDriver(ctx, k, atBaseURL(cc, hookURL))
			if err != nil {
				t.Fatal(err)
			}

			a := loadActor(t, filepath.Join(env.root, "examples", "hello-actor.yaml"), ns)
			name := "values-" + tc.release + "-" + env.runID
			mapAt(a, "metadata")["name"] = name
			mapAt(a, "spec")["transport"] = tc.transport
			if _, err := k.create(ctx, a, false); err != nil {
				t.Fatal(err)
			}
			if _, err := d.converge(ctx, ns, name, 8); err != nil {
				t.Fatal(err)
			}
			got := getActor(t, ctx, ns, name)
			if str(got, "status", "transportStatus") != "Ready" {
				t.Fatalf("actor status: %s", mustJSON(got["status"]))
			}
			got["apiVersion"], got["kind"] = actorGVR().APIVersion, actorGVR().Kind
			groups, err := d.claimChildren(ctx, got)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, g := range groups {
				for _, c := range g.(obj) {
					kinds = append(kinds, str(c.(obj), "kind"))
				}
			}
			slices.Sort(kinds)
			if diff := cmp.Diff(tc.children, kinds); diff != "" {
				t.Errorf("children's kinds (-want +got):\n%s", diff)
			}

			if err := k.delete(ctx, actorGVR(), ns, name); err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				p, err := d.reconcile(ctx, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				if p.Gone {
					break
				}
				if i == 10 {
					t.Fatalf("actor not finalized after %d passes: %s", i, mustJSON(p.Response.Status))
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
			cfg := str(objs["ConfigMap/asya-sync"], "data", "config.yaml")
			var parsed struct {
				Transports map[string]any `json:"transports"`
			}
			if err := yaml.Unmarshal([]byte(cfg), &parsed); err != nil {
				t.Fatalf("config.yaml: %v\n%s", err, cfg)
			}
			if got := keys(parsed.Transports); !slices.Equal(got, want) {
				t.Errorf("transports %v, want %v:\n%s", got, want, cfg)
			}
			if slices.Contains(want, "rabbitmq") {
				return
			}
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(env.syncBin, "render", "-f", filepath.Join(env.root, "examples", "hello-actor.yaml"), "--config", path)
			cmd.Env = append(os.Environ(), "ASYA_SYNC_CONFIG=")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), `transport "rabbitmq" is not configured`) {
				t.Errorf("a RabbitMQ actor on %s: %v\n%s", file, err, out)
			}
		})
	}
}

// startExtraService runs another asya-sync (the build bin) on cfg over
// plain HTTP on loopback until the test ends and returns its base URL.
func startExtraService(t *testing.T, name, bin, cfg string, extraEnv []string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p, err := startProcess("asya-sync-"+name, env.work, append([]string{"ASYA_SYNC_CONFIG="}, extraEnv...),
		bin, "serve", "--config", path, "--listen", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(10 * time.Second) })
	if err := waitFor(name+" /readyz", 30*time.Second, p, httpOK("http://"+addr+"/readyz")); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

func decodeSecret(t *testing.T, v string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		t.Fatalf("secret value: %v", err)
	}
	return string(b)
}
