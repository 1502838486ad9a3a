//go:build e2e

package api

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// claimFields are the fields Crossplane writes into a claim's spec.
var claimFields = []string{"compositionRef", "compositionRevisionRef", "compositionRevisionSelector", "compositionSelector",
	"compositionUpdatePolicy", "compositeDeletePolicy", "resourceRef", "writeConnectionSecretToRef", "publishConnectionDetailsTo"}

// TestCrossplaneClaimFields: a flat actor carrying every field Crossplane
// writes into a claim applies with kubectl's strict field validation,
// keeps those fields as written, and syncs as it would without them.
func TestCrossplaneClaimFields(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	ns := "e2e-claim-fields"
	testenv.EnsureNamespace(t, ctx, ns, true)
	file := filepath.Join(env.Root, "e2e", "testdata", "actors", "flat-crossplane-claim.yaml")
	testenv.Kubectl(t, "apply", "--validate=strict", "-n", ns, "-f", file)
	converge(t, ctx, ns, "enrich")

	a := testenv.GetActor(t, ctx, ns, "enrich")
	written := testenv.LoadActor(t, file, ns)
	for _, f := range claimFields {
		if got, want := testenv.MustJSON(testenv.Field(a, "spec", f)), testenv.MustJSON(testenv.Field(written, "spec", f)); got != want {
			t.Errorf("spec.%s stored as %s, want %s as written", f, got, want)
		}
	}
	if c := conditions(a)["TransportReady"]; testenv.Str(c, "status") != "True" {
		t.Errorf("TransportReady %s", testenv.MustJSON(c))
	}
	if c := conditions(a)["WorkloadReady"]; testenv.Str(c, "reason") == "InvalidSpec" {
		t.Errorf("refused: %s", testenv.MustJSON(c))
	}
	d, ok := childrenOf(t, ctx, ns, "enrich")["Deployment/enrich"]
	if !ok {
		t.Fatalf("no Deployment; status %s", testenv.MustJSON(a["status"]))
	}
	if pod := testenv.MustJSON(testenv.Field(d, "spec", "template", "spec")); !strings.Contains(pod, `{"name":"ASYA_HANDLER","value":"enrich.handlers.run"}`) {
		t.Errorf("the runtime does not run the handler: %s", pod)
	}
	deleteAndFinalize(t, ctx, ns, "enrich")
}

// crewValues turn every crew actor of upstream's crew chart on, on one
// transport, with the values that write more fields (sidecar env,
// annotations, the actors' env).
func crewValues(transport string) []string {
	var args []string
	for _, a := range []string{"x-sink", "x-sump", "x-pause", "x-resume", "checkpoint-s3"} {
		args = append(args, "--set", a+".enabled=true", "--set", a+".transport="+transport)
	}
	return append(args,
		"--set", "x-sink.env.ASYA_SINK_HOOKS=checkpoint-s3",
		"--set", "x-sink.sidecar.env[0].name=ASYA_LOG_LEVEL", "--set", "x-sink.sidecar.env[0].value=debug",
		"--set", "x-sump.annotations.team=platform",
		"--set", "x-resume.env.ASYA_RESUME_MERGE_MODE=deep")
}

// TestUpstreamCrewChart (by hand: ASYA_UPSTREAM names a checkout of
// upstream Asya at a7cec2a, docs/testing.md): upstream's crew chart,
// unchanged, on RabbitMQ and on SQS, installs with helm install and
// applies with kubectl apply --validate=strict, and its actors sync, each
// running its handler with upstream's end-actor flags. With persistence
// on, its flavor and its actors' state proxies run too.
func TestUpstreamCrewChart(t *testing.T) {
	root := os.Getenv("ASYA_UPSTREAM")
	if root == "" {
		t.Skip("ASYA_UPSTREAM is not set: it names a checkout of upstream Asya at a7cec2a, whose crew chart this test installs (docs/testing.md)")
	}
	chart := filepath.Join(root, "deploy", "helm-charts", "asya-crew")
	if _, err := os.Stat(filepath.Join(chart, "Chart.yaml")); err != nil {
		t.Fatalf("ASYA_UPSTREAM=%s has no crew chart: %v", root, err)
	}
	ctx := testenv.CtxFor(t, 5*time.Minute)
	for _, transport := range []string{"rabbitmq", "sqs"} {
		t.Run(transport, func(t *testing.T) {
			values := crewValues(transport)
			suffix := ""
			if transport == "sqs" {
				suffix = "-" + env.RunID // SQS re-creates a deleted queue only after 60 s
			}
			t.Run("helm install", func(t *testing.T) {
				ns := "e2e-crew-" + transport + "-helm" + suffix
				testenv.EnsureNamespace(t, ctx, ns, true)
				rendered := renderCrew(t, chart, "crew", ns, values)
				if _, err := env.Helm(append([]string{"install", "crew", chart, "-n", ns}, values...)...); err != nil {
					t.Fatal(err)
				}
				checkCrew(t, ctx, ns, rendered)
				if _, err := env.Helm("uninstall", "crew", "-n", ns); err != nil {
					t.Error(err)
				}
			})
			t.Run("kubectl apply", func(t *testing.T) {
				ns := "e2e-crew-" + transport + "-apply" + suffix
				testenv.EnsureNamespace(t, ctx, ns, true)
				rendered := renderCrew(t, chart, "crew", ns, values)
				file := filepath.Join(t.TempDir(), "crew.yaml")
				out, err := env.Helm(append([]string{"template", "crew", chart, "-n", ns}, values...)...)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
					t.Fatal(err)
				}
				testenv.Kubectl(t, "apply", "--validate=strict", "-n", ns, "-f", file)
				checkCrew(t, ctx, ns, rendered)
			})
		})
	}
	t.Run("persistence", func(t *testing.T) {
		// With persistence on, the chart writes an EnvironmentConfig, the
		// flavor <release>-persistence-s3 that checkpoint-s3 names, and gives
		// the sink and the sump a stateProxy: it installs unchanged, the
		// EnvironmentConfig served by the CRD asya-sync ships, and each
		// actor runs its connector. Upstream's own example of an actor
		// with that flavor (asya-persistence-s3: release asya) runs it too.
		ns := "e2e-crew-persistence-" + env.RunID
		testenv.EnsureNamespace(t, ctx, ns, true)
		args := append(crewValues("sqs"), "--set", "persistence.enabled=true", "--set", "persistence.backend=s3",
			"--set", "persistence.config.bucket=results", "--set", "persistence.config.errorsBucket=errors",
			"--set", "persistence.config.region=us-east-1")
		rendered := renderCrew(t, chart, "asya", ns, args)
		if _, err := env.Helm(append([]string{"install", "asya", chart, "-n", ns}, args...)...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = env.Helm("uninstall", "asya", "-n", ns) })
		example := testenv.LoadActor(t, filepath.Join(root, "examples", "asyas", "actor-with-persistence-flavor.yaml"), ns)
		testenv.MapAt(example, "spec")["actor"] = testenv.Str(example, "spec", "actor") + "-" + env.RunID // an SQS queue of its own
		if _, err := env.Cluster.Client.Create(ctx, example, false); err != nil {
			t.Fatalf("upstream's example: %v", err)
		}
		rendered[testenv.Str(example, "metadata", "name")] = example
		for _, name := range []string{"x-sink", "x-sump", "checkpoint-s3", testenv.Str(example, "metadata", "name")} {
			if wantConnectors(t, ctx, rendered[name]) == nil {
				t.Errorf("%s: no state proxy with persistence on: %s", name, testenv.MustJSON(rendered[name]["spec"]))
			}
		}
		checkCrew(t, ctx, ns, rendered)
	})
}

// wantConnectors are the connector containers an actor's spec asks for,
// its own stateProxy's and its flavors', read from the cluster.
func wantConnectors(t *testing.T, ctx context.Context, a testenv.Obj) []string {
	t.Helper()
	proxies, _ := testenv.Field(a, "spec", "stateProxy").([]any)
	flavors, _ := testenv.Field(a, "spec", "flavors").([]any)
	if len(flavors) > 0 {
		r, err := env.Cluster.Client.ByKind(ctx, "apiextensions.crossplane.io/v1beta1", "EnvironmentConfig")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range flavors {
			ec, err := env.Cluster.Client.Get(ctx, r, "", f.(string))
			if err != nil {
				t.Fatalf("flavor %s: %v", f, err)
			}
			more, _ := testenv.Field(ec, "data", "stateProxy").([]any)
			proxies = append(proxies, more...)
		}
	}
	var names []string
	for _, p := range proxies {
		names = append(names, "asya-state-proxy-"+testenv.Str(p.(testenv.Obj), "name"))
	}
	return names
}

// renderCrew renders the crew chart's AsyncActors as the release, keyed
// by name.
func renderCrew(t *testing.T, chart, release, ns string, values []string) map[string]testenv.Obj {
	t.Helper()
	out, err := env.Helm(append([]string{"template", release, chart, "-n", ns}, values...)...)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := testenv.SplitYAML([]byte(out), "helm template "+chart)
	if err != nil {
		t.Fatal(err)
	}
	actors := map[string]testenv.Obj{}
	for _, d := range docs {
		if testenv.Str(d, "kind") == "AsyncActor" {
			actors[testenv.Str(d, "metadata", "name")] = d
		}
	}
	if len(actors) == 0 {
		t.Fatalf("the crew chart rendered no AsyncActor:\n%s", out)
	}
	return actors
}

// checkCrew syncs each rendered crew actor and checks what its pods would
// run: the crew image and handler, the chart's env, and upstream's flags
// for the sink and the sump (the sidecar's ASYA_IS_END_ACTOR, the
// runtime's ASYA_ENABLE_VALIDATION=false); then deletes and finalizes it.
func checkCrew(t *testing.T, ctx context.Context, ns string, rendered map[string]testenv.Obj) {
	t.Helper()
	for _, name := range testenv.Keys(rendered) {
		r := rendered[name]
		converge(t, ctx, ns, name)
		a := testenv.GetActor(t, ctx, ns, name)
		for _, f := range claimFields {
			if want := testenv.Field(r, "spec", f); want != nil && testenv.MustJSON(testenv.Field(a, "spec", f)) != testenv.MustJSON(want) {
				t.Errorf("%s: spec.%s stored as %s, want %s", name, f, testenv.MustJSON(testenv.Field(a, "spec", f)), testenv.MustJSON(want))
			}
		}
		if c := conditions(a)["TransportReady"]; testenv.Str(c, "status") != "True" {
			t.Errorf("%s: TransportReady %s", name, testenv.MustJSON(c))
		}
		if c := conditions(a)["WorkloadReady"]; testenv.Str(c, "reason") == "InvalidSpec" {
			t.Errorf("%s: refused: %s", name, testenv.MustJSON(c))
		}
		d, ok := childrenOf(t, ctx, ns, name)["Deployment/"+name]
		if !ok {
			t.Errorf("%s: no Deployment; status %s", name, testenv.MustJSON(a["status"]))
			continue
		}
		runtime, sidecar := containerEnv(d, "asya-runtime"), containerEnv(d, "asya-sidecar")
		if got, want := runtime["ASYA_HANDLER"], testenv.Str(r, "spec", "handler"); got != want || want == "" {
			t.Errorf("%s: ASYA_HANDLER %q, want the chart's %q", name, got, want)
		}
		if img := testenv.Str(containerOf(d, "asya-runtime"), "image"); img != testenv.Str(r, "spec", "image") {
			t.Errorf("%s: runtime image %q, want the chart's %q", name, img, testenv.Str(r, "spec", "image"))
		}
		envs, _ := testenv.Field(r, "spec", "env").([]any)
		for _, e := range envs {
			if e := e.(testenv.Obj); runtime[testenv.Str(e, "name")] != testenv.Str(e, "value") {
				t.Errorf("%s: runtime %s=%q, want the chart's %q", name, testenv.Str(e, "name"), runtime[testenv.Str(e, "name")], testenv.Str(e, "value"))
			}
		}
		envs, _ = testenv.Field(r, "spec", "sidecar", "env").([]any)
		for _, e := range envs {
			if e := e.(testenv.Obj); sidecar[testenv.Str(e, "name")] != testenv.Str(e, "value") {
				t.Errorf("%s: sidecar %s=%q, want the chart's %q", name, testenv.Str(e, "name"), sidecar[testenv.Str(e, "name")], testenv.Str(e, "value"))
			}
		}
		end := name == "x-sink" || name == "x-sump"
		if got := sidecar["ASYA_IS_END_ACTOR"] == "true"; got != end {
			t.Errorf("%s: sidecar ASYA_IS_END_ACTOR=%q, want it true only for the sink and the sump", name, sidecar["ASYA_IS_END_ACTOR"])
		}
		if got := runtime["ASYA_ENABLE_VALIDATION"] == "false"; got != end {
			t.Errorf("%s: runtime ASYA_ENABLE_VALIDATION=%q, want false only for the sink and the sump", name, runtime["ASYA_ENABLE_VALIDATION"])
		}
		if got, want := sidecar["ASYA_ACTOR_NAME"], testenv.Str(r, "spec", "actor"); got != want {
			t.Errorf("%s: ASYA_ACTOR_NAME %q, want %q", name, got, want)
		}
		for _, c := range wantConnectors(t, ctx, r) {
			if containerOf(d, c) == nil {
				t.Errorf("%s: no connector container %s", name, c)
			}
		}
		if len(wantConnectors(t, ctx, r)) > 0 && runtime["ASYA_STATE_PROXY_MOUNTS"] == "" {
			t.Errorf("%s: state proxies without ASYA_STATE_PROXY_MOUNTS on the runtime", name)
		}
	}
	for _, name := range testenv.Keys(rendered) {
		deleteAndFinalize(t, ctx, ns, name)
	}
}

// containerOf is the workload's container of that name.
func containerOf(workload testenv.Obj, name string) testenv.Obj {
	cs, _ := testenv.Field(workload, "spec", "template", "spec", "containers").([]any)
	for _, c := range cs {
		if testenv.Str(c.(testenv.Obj), "name") == name {
			return c.(testenv.Obj)
		}
	}
	return nil
}

// containerEnv is the container's plain env values, by name.
func containerEnv(workload testenv.Obj, name string) map[string]string {
	out := map[string]string{}
	envs, _ := testenv.Field(containerOf(workload, name), "env").([]any)
	for _, e := range envs {
		out[testenv.Str(e.(testenv.Obj), "name")] = testenv.Str(e.(testenv.Obj), "value")
	}
	return out
}
