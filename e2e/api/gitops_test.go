//go:build e2e

package api

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// offlineTemplate runs helm template, which sees no cluster, as Argo CD
// renders a chart.
func offlineTemplate(ns string, args ...string) (string, error) {
	return env.Helm(slices.Concat([]string{"template", "asya-sync", "./chart", "--namespace", ns}, testenv.BrokerUser, args)...)
}

// TestHelmOfflineRender: rendered without a cluster, the chart refuses to
// generate hook credentials, naming what to set instead, and renders every
// setup whose credentials come from elsewhere. Generated anyway, they
// differ on each render, which is why it refuses.
func TestHelmOfflineRender(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the failure; none: renders
		not  []string
	}{
		{"defaults", nil, []string{"a CA and certificate (set hooks.tls.existingSecret", "a token (set hooks.auth.token.existingSecret)",
			`"GitOps (Argo CD, Flux)"`, "hooks.generateOffline=true", "--dry-run=server"}, nil},
		{"token generated", []string{"--set", "hooks.tls.existingSecret=tls"}, []string{"a token"}, []string{"a CA"}},
		{"certificate generated", []string{"--set", "hooks.auth.token.existingSecret=token"}, []string{"a CA and certificate"}, []string{"a token"}},
		{"existing Secrets", []string{"--set", "hooks.tls.existingSecret=tls", "--set", "hooks.auth.token.existingSecret=token"}, nil, nil},
		{"cert-manager and an existing token", []string{"--set", "hooks.tls.certManager.enabled=true",
			"--set", "hooks.tls.certManager.issuerRef.name=ca", "--set", "hooks.auth.token.existingSecret=token"}, nil, nil},
		{"plain HTTP", []string{"--set", "hooks.tls.enabled=false", "--set", "hooks.auth.token.enabled=false"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := offlineTemplate("asya-system", tc.args...)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(out, "\nkind: Secret\n") {
					t.Errorf("a Secret is rendered although no credential is generated")
				}
				return
			}
			if err == nil {
				t.Fatalf("rendered; want a failure naming %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the failure does not say %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("the failure names %q, which is not generated:\n%s", n, out)
				}
			}
		})
	}
	t.Run("generateOffline", func(t *testing.T) {
		var tokens []string
		for i := 0; i < 2; i++ {
			out, err := offlineTemplate("asya-system", "--set", "hooks.generateOffline=true", "--show-only", "templates/hooks-secrets.yaml")
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, out)
		}
		if tokens[0] == tokens[1] {
			t.Errorf("two offline renders generated the same credentials")
		}
	})
}

// TestGitOpsRenderTwice is the GitOps setup of docs/install.md as Argo CD
// runs it: the token Secret made as the doc says and the certificate
// Secret made once, outside the rendered manifests; the chart rendered
// with helm template and the doc's values, applied, rendered and applied
// again. The second render is the first, the credentials Metacontroller
// resolves from the CompositeController stay the same, and the hooks keep
// answering a driver that read them at the first apply.
//
// The same with generated credentials (hooks.generateOffline) fails: the
// second apply replaces them, the service reads the new ones, and the
// driver, which like Metacontroller keeps what it read until the
// CompositeController's spec changes, no longer gets through.
func TestGitOpsRenderTwice(t *testing.T) {
	ctx := testenv.CtxFor(t, 4*time.Minute)
	values, err := testenv.DocFence(filepath.Join(env.Root, "docs", "install.md"), "### GitOps (Argo CD, Flux)", "yaml", "# values-gitops-existing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	valuesFile := filepath.Join(t.TempDir(), "values-gitops.yaml")
	if err := os.WriteFile(valuesFile, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("existing Secrets", func(t *testing.T) {
		const ns = "e2e-gitops"
		testenv.EnsureNamespace(t, ctx, ns, false)
		// The Secrets, made once outside Git: the token as the doc says, the
		// certificate for the Service by a CA of the test's.
		runDocCommands(t, ctx, "### GitOps (Argo CD, Flux)", t.TempDir(), ns, func() {})
		ca, err := testenv.NewCA("asya-sync gitops CA")
		if err != nil {
			t.Fatal(err)
		}
		crt, key, err := ca.IssueServer("asya-sync."+ns, "asya-sync."+ns+".svc", "asya-sync."+ns+".svc.cluster.local")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Cluster.Client.Apply(ctx, testenv.Secret(ns, "asya-sync-tls", "kubernetes.io/tls",
			map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": ca.PEM}), "e2e"); err != nil {
			t.Fatal(err)
		}
		renders := gitopsRenderTwice(t, ctx, ns, "-f", valuesFile)
		if renders.first != renders.second {
			t.Errorf("the two renders differ")
		}
		if renders.failures != "" {
			t.Errorf("hook calls after the second apply failed:\n%s", renders.failures)
		}
	})

	t.Run("generated offline", func(t *testing.T) {
		const ns = "e2e-gitops-generated"
		testenv.EnsureNamespace(t, ctx, ns, false)
		renders := gitopsRenderTwice(t, ctx, ns, "--set", "hooks.generateOffline=true")
		// The new certificate fails the old CA, or the new token fails.
		if renders.failures == "" {
			t.Errorf("generated anew by the second render, the credentials did not break the hooks; " +
				"the test no longer shows why the chart refuses to generate them offline")
		}
		t.Logf("hook calls after the second render:\n%s", renders.failures)
	})
}

type gitopsRenders struct {
	first, second string
	failures      string // of the hook calls after the second apply
}

// gitopsRenderTwice renders the chart into ns with args, applies it, starts
// the service as its Deployment says and a driver as its
// CompositeController says, renders and applies again, waits until the
// service has read whatever changed, and calls every hook.
func gitopsRenderTwice(t *testing.T, ctx context.Context, ns string, args ...string) gitopsRenders {
	t.Helper()
	ports, err := testenv.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	cc := "asya-sync-" + ns
	args = append([]string{"--set", "compositeController.name=" + cc,
		"--set", "compositeController.hookURL=https://asya-sync." + ns + ":" + strconv.Itoa(ports[0])}, args...)
	var out gitopsRenders
	out.first = applyRender(t, ctx, ns, args...)
	t.Cleanup(func() { deleteRender(ctx, out.first) })
	_, mounts := startChartService(t, ctx, ns, "asya-sync", ports[0], ports[1])
	d := loopbackDriver(t, ctx, cc, ports[0])
	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); mounts.Run(bg, mountPeriod) }()
	go func() { defer wg.Done(); d.Follow(bg, 200*time.Millisecond) }()
	defer func() { stop(); wg.Wait() }()

	out.second = applyRender(t, ctx, ns, args...)
	time.Sleep(mountPeriod + reloadPeriod + 3*time.Second)
	var failures []string
	for _, hook := range []string{"customize", "sync", "finalize"} {
		var resp testenv.Obj
		req := rotationRequest(d.Controller(), hook == "finalize")
		testenv.MapAt(req, "parent", "metadata")["namespace"] = ns
		if err := d.Post(ctx, hook, req, &resp); err != nil {
			failures = append(failures, err.Error())
		}
	}
	out.failures = strings.Join(failures, "\n")
	return out
}

// applyRender renders the chart offline and applies every object, as Argo
// CD syncs an application; it returns the render.
func applyRender(t *testing.T, ctx context.Context, ns string, args ...string) string {
	t.Helper()
	rendered, err := offlineTemplate(ns, args...)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := testenv.SplitYAML([]byte(rendered), "helm template")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range docs {
		if _, err := env.Cluster.Client.Apply(ctx, o, "argocd-controller"); err != nil {
			t.Fatalf("apply %s %s: %v", testenv.Str(o, "kind"), testenv.Str(o, "metadata", "name"), err)
		}
	}
	return rendered
}

// deleteRender deletes what applyRender applied.
func deleteRender(ctx context.Context, rendered string) {
	docs, _ := testenv.SplitYAML([]byte(rendered), "helm template")
	k := env.Cluster.Client
	for _, o := range docs {
		if r, err := k.ByKind(ctx, testenv.Str(o, "apiVersion"), testenv.Str(o, "kind")); err == nil {
			_ = k.Delete(ctx, r, testenv.Str(o, "metadata", "namespace"), testenv.Str(o, "metadata", "name"))
		}
	}
}
