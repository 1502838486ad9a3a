//go:build e2e

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/budget"
	"github.com/asya-sh/asya-sync/internal/testenv"
)

// dryRunApply has the API server validate and admit o as a server-side
// apply, without storing it: schema, strict field validation, defaulting,
// admission.
func dryRunApply(ctx context.Context, o testenv.Obj) error {
	k := env.Cluster.Client
	r, err := k.ByKind(ctx, testenv.Str(o, "apiVersion"), testenv.Str(o, "kind"))
	if err != nil {
		return err
	}
	q := url.Values{"fieldManager": {"e2e-dry-run"}, "force": {"true"}, "fieldValidation": {"Strict"}, "dryRun": {"All"}}
	_, err = k.Do(ctx, "PATCH", r.Path(testenv.Str(o, "metadata", "namespace"), testenv.Str(o, "metadata", "name"))+"?"+q.Encode(), o, "application/apply-patch+yaml")
	return err
}

// generateOffline lets helm template, which sees no cluster, generate the
// hook credentials, which the chart otherwise refuses there (each render
// would make new ones). Tests that render the defaults give it, as they
// check what the chart generates; TestHelmOfflineRender checks the refusal.
var generateOffline = []string{"--set", "hooks.generateOffline=true"}

// renderChart renders the chart with BrokerUser, generateOffline and then
// args.
func renderChart(t *testing.T, ns string, args ...string) map[string]testenv.Obj {
	t.Helper()
	start := time.Now()
	objs := helmTemplate(t, slices.Concat([]string{"--namespace", ns, "--include-crds"}, testenv.BrokerUser, generateOffline, args))
	env.Timed("helm template "+strings.Join(args, " "), start)
	return objs
}

// helmTemplate renders the chart as release asya-sync with args, keyed
// kind/name.
func helmTemplate(t *testing.T, args []string) map[string]testenv.Obj {
	t.Helper()
	out, err := env.Helm(slices.Concat([]string{"template", "asya-sync", "./chart"}, args)...)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := testenv.SplitYAML([]byte(out), "helm template")
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]testenv.Obj{}
	for _, d := range docs {
		byKey[testenv.Str(d, "kind")+"/"+testenv.Str(d, "metadata", "name")] = d
	}
	return byKey
}

// serviceAccepts checks that the service starts its render command with
// the configuration the chart put in its ConfigMap.
func serviceAccepts(t *testing.T, cm testenv.Obj) {
	t.Helper()
	cfg := testenv.Str(cm, "data", "config.yaml")
	if cfg == "" {
		t.Fatalf("ConfigMap %s has no config.yaml", testenv.Str(cm, "metadata", "name"))
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.SyncBin, "render", "-f", filepath.Join(env.Root, "examples", "hello-actor.yaml"), "--config", path)
	cmd.Env = append(os.Environ(), "ASYA_SYNC_CONFIG=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("asya-sync render with the chart's configuration: %v\n%s\nconfig:\n%s", err, out, cfg)
	}
}

func TestHelmLint(t *testing.T) {
	for _, args := range [][]string{slices.Concat(testenv.BrokerUser, generateOffline), {"-f", "chart/ci/full-values.yaml"},
		slices.Concat(testenv.BrokerUser, generateOffline, []string{"--set", "keda.enabled=false"})} {
		if out, err := env.Helm(append([]string{"lint", "--strict", "./chart"}, args...)...); err != nil {
			t.Errorf("%v", err)
		} else if !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("helm lint %v: %s", args, out)
		}
	}
	// The schema rejects what the service would refuse at startup.
	for _, bad := range [][]string{
		{"--set", "config.transports.rabbitmq.config.hots=x"},
		{"--set", "config.transports.rabbitmq.type=kafka"},
		{"--set", "config.queueCacheTTL=soon"},
		{"--set-string", "config.queueCacheTTL=0"},
		{"--set", "config.queueCacheTTL=0s"},
		{"--set", "config.transports.rabbitmq.config.queues.dlq.maxRetryCount=5"},
		{"--set", "replicaCount=-1"},
		{"--set", "credentials.rabbitmq.nope.secretName=x"},
		{"--set", "hooks.auth.mtls.enabled=true"},
		{"--set", "hooks.tls.certManager.enabled=true"},
		{"--set", "hooks.tls.enabled=false", "--set", "hooks.auth.mtls.enabled=true", "--set", "hooks.auth.mtls.clientCASecret=a", "--set", "hooks.auth.mtls.clientCertSecret=b"},
		{"--set", "hooks.tls.existingSecret=x", "--set", "hooks.tls.certManager.enabled=true", "--set", "hooks.tls.certManager.issuerRef.name=ca"},
		{"--set", "hooks.auth.token.key="},
		{"--set", "hooks.tls.caBundleKey="},
	} {
		if _, err := env.Helm(slices.Concat([]string{"template", "asya-sync", "./chart"}, testenv.BrokerUser, generateOffline, bad)...); err == nil {
			t.Errorf("helm template %v: accepted; want a schema or template error", bad)
		}
	}
}

func TestHelmTemplateDefaults(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	objs := renderChart(t, "asya-system")
	want := []string{"ClusterRole/asya-sync-edit", "ClusterRole/asya-sync-reader", "ClusterRole/asya-sync-view", "ClusterRoleBinding/asya-sync-reader", "CompositeController/asya-sync", "ConfigMap/asya-sync", "CustomResourceDefinition/asyncactors.asya.sh",
		"CustomResourceDefinition/environmentconfigs.apiextensions.crossplane.io", "Deployment/asya-sync", "NetworkPolicy/asya-sync", "PodDisruptionBudget/asya-sync",
		"Secret/asya-sync-tls", "Secret/asya-sync-token", "Service/asya-sync", "ServiceAccount/asya-sync"}
	if got := testenv.Keys(objs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rendered %v, want %v", got, want)
	}
	for k, o := range objs {
		if err := dryRunApply(ctx, o); err != nil {
			t.Errorf("API server rejects %s: %v", k, err)
		}
	}
	serviceAccepts(t, objs["ConfigMap/asya-sync"])

	cc := objs["CompositeController/asya-sync"]
	// Secure by default: HTTPS verified with the generated CA, a Bearer
	// token, both read by Metacontroller from the release's Secrets.
	for _, h := range []string{"customize", "sync", "finalize"} {
		wh := testenv.MapAt(cc, "spec", "hooks", h, "webhook")
		if u := testenv.Str(wh, "url"); u != "https://asya-sync.asya-system/"+h {
			t.Errorf("%s hook URL %q", h, u)
		}
		want := `{"caBundle":{"secretRef":{"key":"ca.crt","name":"asya-sync-tls","namespace":"asya-system"}},` +
			`"authorization":{"secretRef":{"key":"token","name":"asya-sync-token","namespace":"asya-system"},"type":"Bearer"}}`
		got := testenv.MustJSON(testenv.Obj{"caBundle": wh["caBundle"], "authorization": wh["authorization"]})
		if !testenv.JSONEqual(jsonValue(got), jsonValue(want)) || wh["clientTLS"] != nil {
			t.Errorf("%s webhook connection %s, want %s and no clientTLS", h, testenv.MustJSON(wh), want)
		}
	}
	tlsSecret := objs["Secret/asya-sync-tls"]
	for _, key := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if testenv.Str(tlsSecret, "data", key) == "" {
			t.Errorf("generated TLS Secret lacks %s", key)
		}
	}
	if len(testenv.Str(objs["Secret/asya-sync-token"], "data", "token")) < 48 {
		t.Errorf("generated token Secret: %s", testenv.MustJSON(objs["Secret/asya-sync-token"]["data"]))
	}
	if fmt.Sprint(testenv.Field(cc, "spec", "resyncPeriodSeconds")) != "60" || testenv.Field(cc, "spec", "generateSelector") != true {
		t.Errorf("CompositeController spec: %s", testenv.MustJSON(cc["spec"]))
	}
	if !strings.Contains(testenv.MustJSON(cc), `"resource":"scaledobjects"`) {
		t.Errorf("KEDA children missing with keda.enabled=true")
	}

	d := objs["Deployment/asya-sync"]
	pod := testenv.MapAt(d, "spec", "template", "spec")
	if fmt.Sprint(testenv.Field(d, "spec", "replicas")) != "2" {
		t.Errorf("replicas %v", testenv.Field(d, "spec", "replicas"))
	}
	// The token is mounted for two lists (watch.pods whileUnhealthy,
	// watch.namesakes read), which is all the ClusterRole allows.
	if pod["automountServiceAccountToken"] != true {
		t.Errorf("service account token not mounted, with the defaults that read the API server")
	}
	rules := testenv.MustJSON(objs["ClusterRole/asya-sync-reader"]["rules"])
	if rules != `[{"apiGroups":[""],"resources":["pods"],"verbs":["list"]},{"apiGroups":["asya.sh"],"resources":["asyncactors"],"verbs":["list","watch"]}]` {
		t.Errorf("ClusterRole asya-sync-reader rules %s, want list pods, list and watch asyncactors, nothing else", rules)
	}
	if testenv.Str(objs["ClusterRoleBinding/asya-sync-reader"], "roleRef", "name") != "asya-sync-reader" {
		t.Errorf("no ClusterRoleBinding/asya-sync-reader in %v", testenv.Keys(objs))
	}
	c := pod["containers"].([]any)[0].(testenv.Obj)
	if testenv.Field(c, "securityContext", "readOnlyRootFilesystem") != true || testenv.Field(pod, "securityContext", "runAsNonRoot") != true {
		t.Errorf("security context: pod %s container %s", testenv.MustJSON(pod["securityContext"]), testenv.MustJSON(c["securityContext"]))
	}
}

// TestHelmTemplateSecretNames: with watch.secrets read, the service may get
// the Secrets the enabled transports name, by those names only, and with
// watch.secrets true none.
func TestHelmTemplateSecretNames(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`config:
  flatActors: {transport: rabbitmq}
  transports:
    rabbitmq:
      config: {passwordSecretRef: {name: rmq-pass, key: password}}
    sqs:
      type: sqs
      config:
        region: eu-west-1
        accountId: "1"
        credentials:
          accessKeyIdSecretRef: {name: aws-creds, key: id}
          secretAccessKeySecretRef: {name: aws-creds, key: secret}
    off:
      type: rabbitmq
      enabled: false
      config: {host: mq, passwordSecretRef: {name: not-read, key: password}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := renderChart(t, "asya-system", "-f", values)
	want := `[{"apiGroups":[""],"resources":["pods"],"verbs":["list"]},{"apiGroups":["asya.sh"],"resources":["asyncactors"],"verbs":["list","watch"]},` +
		`{"apiGroups":[""],"resourceNames":["aws-creds","rmq-pass"],"resources":["secrets"],"verbs":["get"]}]`
	if rules := testenv.MustJSON(objs["ClusterRole/asya-sync-reader"]["rules"]); rules != want {
		t.Errorf("ClusterRole asya-sync-reader rules\n%s\nwant\n%s", rules, want)
	}
	objs = renderChart(t, "asya-system", "-f", values, "--set", "config.watch.secrets=true")
	if rules := testenv.MustJSON(objs["ClusterRole/asya-sync-reader"]["rules"]); strings.Contains(rules, "secrets") {
		t.Errorf("ClusterRole asya-sync-reader with watch.secrets true: %s", rules)
	}
}

func TestHelmTemplateFullValues(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	ns := "e2e-helm-full"
	testenv.EnsureNamespace(t, ctx, ns, false)
	objs := renderChart(t, ns, "-f", "chart/ci/full-values.yaml")
	for k, o := range objs {
		if err := dryRunApply(ctx, o); err != nil {
			t.Errorf("API server rejects %s: %v", k, err)
		}
	}
	serviceAccepts(t, objs["ConfigMap/asya-hooks"])
	d := objs["Deployment/asya-hooks"]
	if d == nil {
		t.Fatalf("no Deployment/asya-hooks in %v", testenv.Keys(objs))
	}
	js := testenv.MustJSON(d)
	for _, want := range []string{
		`"mountPath":"/etc/asya-sync/rabbitmq"`, `"secretName":"asya-sync-rabbitmq"`, `"path":"password"`,
		`"mountPath":"/etc/asya-sync/rabbitmq-legacy"`, `"secretName":"asya-sync-rabbitmq-legacy"`,
		`"name":"AWS_ACCESS_KEY_ID"`, `"name":"AWS_SESSION_TOKEN"`, `"name":"asya-sync-aws"`,
		`"serviceAccountName":"asya-hooks-sa"`, `"containerPort":9090`, `":9090"`,
	} {
		if !strings.Contains(js, want) {
			t.Errorf("Deployment lacks %s", want)
		}
	}
	fin := testenv.MapAt(objs["CompositeController/asya-sync"], "spec", "hooks", "finalize", "webhook")
	if u := testenv.Str(fin, "url"); u != "https://asya-hooks."+ns+":8080/finalize" {
		t.Errorf("finalize hook URL %q", u)
	}
	if testenv.Str(fin, "clientTLS", "secretRef", "name") != "metacontroller-client" || testenv.Str(fin, "authorization", "secretRef", "name") != "asya-hooks-token" ||
		testenv.Str(fin, "caBundle", "secretRef", "name") != "asya-hooks-tls" {
		t.Errorf("finalize webhook connection: %s", testenv.MustJSON(fin))
	}
	for _, want := range []string{`"--client-ca-file"`, `"--auth-token-dir"`, `"--tls-cert-file"`, `"secretName":"asya-hooks-client-ca"`, `"scheme":"HTTPS"`} {
		if !strings.Contains(js, want) {
			t.Errorf("Deployment lacks %s", want)
		}
	}
	for _, k := range []string{"Secret/asya-hooks-tls", "Secret/asya-hooks-token"} {
		if objs[k] != nil {
			t.Errorf("%s generated although an existing Secret is named", k)
		}
	}
}

// TestHelmTemplateCertManager renders the cert-manager variant. The e2e
// cluster has no cert-manager CRDs, so the Certificate is checked as
// rendered, not admitted; everything else is admitted.
func TestHelmTemplateCertManager(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	objs := renderChart(t, "asya-system", "--set", "hooks.tls.certManager.enabled=true",
		"--set", "hooks.tls.certManager.issuerRef.name=platform-ca", "--set", "hooks.tls.certManager.issuerRef.kind=ClusterIssuer")
	cert := objs["Certificate/asya-sync"]
	if cert == nil {
		t.Fatalf("no Certificate in %v", testenv.Keys(objs))
	}
	if objs["Secret/asya-sync-tls"] != nil {
		t.Errorf("the chart generated a TLS Secret although cert-manager writes it")
	}
	want := `{"apiVersion":"cert-manager.io/v1","kind":"Certificate","spec":{"secretName":"asya-sync-tls",` +
		`"dnsNames":["asya-sync.asya-system","asya-sync.asya-system.svc","asya-sync.asya-system.svc.cluster.local"],` +
		`"issuerRef":{"name":"platform-ca","kind":"ClusterIssuer","group":"cert-manager.io"},"usages":["server auth"]}}`
	got := testenv.Obj{"apiVersion": cert["apiVersion"], "kind": cert["kind"], "spec": testenv.Obj{
		"secretName": testenv.Field(cert, "spec", "secretName"), "dnsNames": testenv.Field(cert, "spec", "dnsNames"),
		"issuerRef": testenv.Field(cert, "spec", "issuerRef"), "usages": testenv.Field(cert, "spec", "usages")}}
	if !testenv.JSONEqual(got, jsonValue(want)) {
		t.Errorf("Certificate\n%s\nwant\n%s", testenv.MustJSON(got), want)
	}
	if n := testenv.Str(objs["CompositeController/asya-sync"], "spec", "hooks", "sync", "webhook", "caBundle", "secretRef", "name"); n != "asya-sync-tls" {
		t.Errorf("caBundle from %q, want the Certificate's Secret", n)
	}
	for k, o := range objs {
		if k == "Certificate/asya-sync" {
			continue
		}
		if err := dryRunApply(ctx, o); err != nil {
			t.Errorf("API server rejects %s: %v", k, err)
		}
	}
}

// TestHelmTemplatePlainHTTP is the documented opt-out: no TLS, no token,
// no connection fields on the webhooks.
func TestHelmTemplatePlainHTTP(t *testing.T) {
	objs := renderChart(t, "asya-system", "--set", "hooks.tls.enabled=false", "--set", "hooks.auth.token.enabled=false")
	wh := testenv.MapAt(objs["CompositeController/asya-sync"], "spec", "hooks", "sync", "webhook")
	if testenv.Str(wh, "url") != "http://asya-sync.asya-system/sync" || wh["caBundle"] != nil || wh["authorization"] != nil {
		t.Errorf("plain HTTP webhook: %s", testenv.MustJSON(wh))
	}
	if objs["Secret/asya-sync-tls"] != nil || objs["Secret/asya-sync-token"] != nil {
		t.Errorf("credential Secrets rendered with TLS and auth off: %v", testenv.Keys(objs))
	}
	if js := testenv.MustJSON(objs["Deployment/asya-sync"]); strings.Contains(js, "--tls-cert-file") || strings.Contains(js, "--auth-token") {
		t.Errorf("Deployment still passes credential flags")
	}
}

// TestHelmTokenOffWithTLS: turning the token off while TLS stays on is
// refused with a message naming the acknowledgement; acknowledged, the
// chart passes it to the service, which starts; with mutual TLS the token
// may be off.
func TestHelmTokenOffWithTLS(t *testing.T) {
	out, err := env.Helm(slices.Concat([]string{"template", "asya-sync", "./chart"}, testenv.BrokerUser, generateOffline, []string{"--set", "hooks.auth.token.enabled=false"})...)
	if err == nil || !strings.Contains(out, "hooks.auth.allowUnauthenticated=true") {
		t.Errorf("token off with TLS on: err %v, want a failure naming hooks.auth.allowUnauthenticated\n%s", err, out)
	}

	objs := renderChart(t, "asya-system", "--set", "hooks.auth.token.enabled=false", "--set", "hooks.auth.allowUnauthenticated=true")
	c := testenv.MapAt(objs["Deployment/asya-sync"], "spec", "template", "spec")["containers"].([]any)[0].(testenv.Obj)
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	if !slices.Contains(args, "--allow-unauthenticated") || slices.Contains(args, "--auth-token-dir") || !slices.Contains(args, "--tls-cert-file") {
		t.Errorf("acknowledged: the service's args %v, want --tls-cert-file and --allow-unauthenticated, no --auth-token-dir", args)
	}
	if wh := testenv.MapAt(objs["CompositeController/asya-sync"], "spec", "hooks", "sync", "webhook"); wh["authorization"] != nil || wh["caBundle"] == nil {
		t.Errorf("acknowledged: webhook %s, want caBundle and no authorization", testenv.MustJSON(wh))
	}
	// The service takes the chart's arguments past its own check, and
	// refuses them without the acknowledgement.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(testenv.Str(objs["ConfigMap/asya-sync"], "data", "config.yaml")), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(extra ...string) string {
		cmd := exec.Command(env.SyncBin, append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:1",
			"--tls-cert-file", filepath.Join(dir, "missing.crt"), "--tls-key-file", filepath.Join(dir, "missing.key")}, extra...)...)
		cmd.Env = append(os.Environ(), "ASYA_SYNC_CONFIG=", "ASYA_SYNC_AUTH_TOKEN_FILE=", "ASYA_SYNC_AUTH_TOKEN_DIR=", "ASYA_SYNC_CLIENT_CA_FILE=", "ASYA_SYNC_ALLOW_UNAUTHENTICATED=")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := serve(); !strings.Contains(out, "--allow-unauthenticated") {
		t.Errorf("the service starts HTTPS hooks without auth:\n%s", out)
	}
	if out := serve("--allow-unauthenticated"); strings.Contains(out, "accept calls from anyone") || !strings.Contains(out, "missing.crt") {
		t.Errorf("acknowledged, the service still refuses, or fails elsewhere than on the missing certificate:\n%s", out)
	}

	renderChart(t, "asya-system", "--set", "hooks.auth.token.enabled=false", "--set", "hooks.auth.mtls.enabled=true",
		"--set", "hooks.auth.mtls.clientCASecret=ca", "--set", "hooks.auth.mtls.clientCertSecret=client")
}

func jsonValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

func TestHelmTemplateWithoutKEDA(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	objs := renderChart(t, "asya-system", "--set", "keda.enabled=false")
	cc := objs["CompositeController/asya-sync"]
	if err := dryRunApply(ctx, cc); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(childResources(cc), " "); got != "deployments statefulsets configmaps serviceaccounts" {
		t.Errorf("child resources without KEDA: %s", got)
	}
}

// With the ServiceMonitor, PrometheusRule and dashboard on, the API server
// (with the Prometheus Operator's CRDs) admits every object; the rules are
// the promtool-tested file, the dashboard carries the sidecar's label, and
// the service learns the webhook timeout the alert compares against.
func TestHelmTemplateMonitoring(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	ns := "e2e-helm-monitoring"
	testenv.EnsureNamespace(t, ctx, ns, false)
	objs := renderChart(t, ns, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true",
		"--set", "metrics.dashboard.enabled=true", "--set", "compositeController.hookTimeout=25s")
	for _, k := range []string{"ServiceMonitor/asya-sync", "PrometheusRule/asya-sync", "ConfigMap/asya-sync-dashboard"} {
		o := objs[k]
		if o == nil {
			t.Fatalf("no %s in %v", k, testenv.Keys(objs))
		}
		if err := dryRunApply(ctx, o); err != nil {
			t.Errorf("API server rejects %s: %v", k, err)
		}
	}

	alerts, err := testenv.ReadYAMLDocs(filepath.Join(env.Root, "chart", "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := testenv.MustJSON(objs["PrometheusRule/asya-sync"]["spec"]), testenv.MustJSON(alerts[0]); got != want {
		t.Errorf("PrometheusRule spec differs from chart/files/alerts.yaml:\n%s\n%s", got, want)
	}
	dashboard, err := os.ReadFile(filepath.Join(env.Root, "chart", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	cm := objs["ConfigMap/asya-sync-dashboard"]
	if testenv.Str(cm, "metadata", "labels", "grafana_dashboard") != "1" || testenv.Str(cm, "data", "asya-sync.json") != strings.TrimSpace(string(dashboard)) {
		t.Errorf("dashboard ConfigMap: labels %v, data differs from chart/files/dashboard.json: %v",
			testenv.Field(cm, "metadata", "labels"), testenv.Str(cm, "data", "asya-sync.json") != strings.TrimSpace(string(dashboard)))
	}
	sm := objs["ServiceMonitor/asya-sync"]
	if !strings.Contains(testenv.MustJSON(sm), `"port":"metrics"`) || !strings.Contains(testenv.MustJSON(sm), `"path":"/metrics"`) {
		t.Errorf("ServiceMonitor endpoints: %s", testenv.MustJSON(testenv.Field(sm, "spec", "endpoints")))
	}
	if js := testenv.MustJSON(objs["Deployment/asya-sync"]); !strings.Contains(js, `"--hook-timeout","25s"`) {
		t.Errorf("the service is not given the webhook timeout: %s", js)
	}
}

// TestHelmServiceMonitorPort reads the ServiceMonitor and the Service the
// chart renders, with TLS on and off: every endpoint scrapes a port the
// Service has, and that port is the metrics port, never the hook port
// (HTTPS with TLS on; with TLS off the NetworkPolicy admits only
// Metacontroller to it).
func TestHelmServiceMonitorPort(t *testing.T) {
	for _, tls := range []string{"true", "false"} {
		t.Run("tls="+tls, func(t *testing.T) {
			objs := renderChart(t, "asya-system", "--set", "metrics.serviceMonitor.enabled=true",
				"--set", "hooks.tls.enabled="+tls, "--set", "hooks.auth.token.enabled="+tls)
			svc, sm := objs["Service/asya-sync"], objs["ServiceMonitor/asya-sync"]
			if svc == nil || sm == nil {
				t.Fatalf("no Service or ServiceMonitor in %v", testenv.Keys(objs))
			}
			ports := map[string]testenv.Obj{}
			for _, p := range testenv.Field(svc, "spec", "ports").([]any) {
				ports[testenv.Str(p.(testenv.Obj), "name")] = p.(testenv.Obj)
			}
			endpoints, _ := testenv.Field(sm, "spec", "endpoints").([]any)
			if len(endpoints) == 0 {
				t.Fatalf("ServiceMonitor has no endpoints: %s", testenv.MustJSON(sm["spec"]))
			}
			for _, e := range endpoints {
				name := testenv.Str(e.(testenv.Obj), "port")
				p, ok := ports[name]
				switch {
				case !ok:
					t.Errorf("ServiceMonitor scrapes port %q; the Service has %v", name, testenv.Keys(ports))
				case testenv.Str(p, "targetPort") != "metrics":
					t.Errorf("ServiceMonitor scrapes port %q, which targets the container's %q port, not metrics", name, testenv.Str(p, "targetPort"))
				}
			}
		})
	}
}

// TestHelmTemplateBudget renders the chart with each configuration of the
// budget in docs/performance.md: the CompositeController declares exactly
// the budgeted child resources, the API server admits it, and the service
// accepts the configuration the chart renders.
func TestHelmTemplateBudget(t *testing.T) {
	ctx := testenv.CtxFor(t, time.Minute)
	rows, err := budget.Read(filepath.Join(env.Root, "docs", "performance.md"))
	if err != nil || len(rows) == 0 {
		t.Fatalf("budget: %v (%d rows)", err, len(rows))
	}
	for i, row := range rows {
		t.Run(row.Config, func(t *testing.T) {
			// Not under t.TempDir(): the test's name has commas, which helm's -f splits on.
			values := filepath.Join(env.Work, fmt.Sprintf("budget-%d.yaml", i))
			if err := os.WriteFile(values, []byte("config: "+row.Config+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			objs := renderChart(t, "asya-system", "-f", values)
			cc := objs["CompositeController/asya-sync"]
			if err := dryRunApply(ctx, cc); err != nil {
				t.Fatal(err)
			}
			resources := childResources(cc)
			slices.Sort(resources)
			if diff := cmp.Diff(row.Children, resources); diff != "" {
				t.Errorf("the chart's CompositeController declares other child resources than the budget (-budget +chart):\n%s", diff)
			}
			serviceAccepts(t, objs["ConfigMap/asya-sync"])
		})
	}
}

// childResources are the resources a CompositeController declares as
// children, in its order.
func childResources(cc testenv.Obj) []string {
	var out []string
	for _, c := range testenv.Field(cc, "spec", "childResources").([]any) {
		out = append(out, testenv.Str(c.(testenv.Obj), "resource"))
	}
	return out
}

// TestHelmValuesCases renders the chart with each case of
// config/testdata/chart-values.yaml, which config's
// TestChartSchemaAgreesWithLoader checks against the schema and the
// service's loader without Helm. Here Helm itself layers the values,
// validates them and runs the templates: values the service would refuse
// at startup fail helm template naming the key, whether the schema or a
// template's rule across keys refuses them, and the service's loader
// accepts the configuration rendered from the others.
func TestHelmValuesCases(t *testing.T) {
	var file struct {
		Base  testenv.Obj `json:"base"`
		Cases []struct {
			Name    string      `json:"name"`
			Files   []string    `json:"files"`
			Values  testenv.Obj `json:"values"`
			Refused string      `json:"refused"`
		} `json:"cases"`
	}
	data, err := os.ReadFile(filepath.Join(env.Root, "config", "testdata", "chart-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &file); err != nil || len(file.Cases) == 0 {
		t.Fatalf("config/testdata/chart-values.yaml: %v (%d cases)", err, len(file.Cases))
	}
	// Not under t.TempDir(): helm's -f splits on commas, which a test's
	// name may hold.
	writeValues := func(name string, v testenv.Obj) string {
		path := filepath.Join(env.Work, "values-case-"+name+".yaml")
		if err := os.WriteFile(path, []byte(testenv.MustJSON(v)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base := writeValues("base", file.Base)
	for i, tc := range file.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			args := slices.Concat([]string{"template", "asya-sync", "./chart", "-f", base}, generateOffline)
			for _, f := range tc.Files {
				args = append(args, "-f", f)
			}
			args = append(args, "-f", writeValues(fmt.Sprint(i), tc.Values))
			out, err := env.Helm(args...)
			if tc.Refused != "" {
				if err == nil {
					t.Fatalf("helm template accepts the values; want a refusal naming %s", tc.Refused)
				}
				if !helmNamesKey(out, tc.Refused) {
					t.Errorf("helm template refuses the values naming no %s:\n%s", tc.Refused, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			docs, err := testenv.SplitYAML([]byte(out), "helm template")
			if err != nil {
				t.Fatal(err)
			}
			var rendered []string
			for _, d := range docs {
				if cfg := testenv.Str(d, "data", "config.yaml"); testenv.Str(d, "kind") == "ConfigMap" && cfg != "" {
					rendered = append(rendered, cfg)
				}
			}
			if len(rendered) != 1 {
				t.Fatalf("%d ConfigMaps with a config.yaml rendered, want 1", len(rendered))
			}
			if _, err := config.Parse([]byte(rendered[0])); err != nil {
				t.Errorf("the service refuses the configuration the chart rendered: %v\n%s", err, rendered[0])
			}
		})
	}
}

// helmNamesKey reports whether helm's output names the values key, dotted
// (as a template's fail says it) or as the schema validator does: a JSON
// pointer, or the pointer of the object that misses or must not have the
// key's last part.
func helmNamesKey(out, key string) bool {
	pointer := "/" + strings.ReplaceAll(key, ".", "/")
	i := strings.LastIndex(pointer, "/")
	parent, last := pointer[:i], pointer[i+1:]
	return strings.Contains(out, key) || strings.Contains(out, "'"+pointer+"'") ||
		strings.Contains(out, "'"+parent+"'") && strings.Contains(out, "'"+last+"'")
}

// TestHelmNotesSuggestFittingExample: the notes helm prints after an
// install suggest example actors the release serves. helm template leaves
// NOTES.txt out, so they are rendered as helm install --dry-run=client
// prints them, after the manifests, against the test API server (asked
// for its version and kinds; nothing is installed). For each
// examples/values-*.yaml and a few transports set otherwise, every
// example the notes name is read from examples/: each of its AsyncActors
// names in spec.transport a transport that the configuration the release
// renders enables, or, flat and naming none, runs on that configuration's
// flatActors.transport (the only enabled transport when unset), and the
// service renders it on that configuration. The actor the notes print
// where no example fits is held to the same.
func TestHelmNotesSuggestFittingExample(t *testing.T) {
	// Not under t.TempDir(): helm's -f splits on commas, which a test's
	// name may hold.
	valuesFile := func(name, values string) string {
		path := filepath.Join(env.Work, "values-notes-"+name+".yaml")
		if err := os.WriteFile(path, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sqs := []string{"--set", "config.transports.sqs.type=sqs", "--set", "config.transports.sqs.config.region=eu-west-1",
		"--set-string", "config.transports.sqs.config.accountId=123456789012"}
	type notesCase struct {
		name string
		args []string
		want []string // the example files the notes name, in order; nil: any that fit
	}
	var cases []notesCase
	files, err := filepath.Glob(filepath.Join(env.Root, "examples", "values-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples/values-*.yaml: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		cases = append(cases, notesCase{name: filepath.Base(f), args: []string{"-f", "examples/" + filepath.Base(f)}})
	}
	cases = append(cases,
		notesCase{"the defaults", nil, []string{"flat-actor.yaml", "hello-actor.yaml"}},
		notesCase{"flat actors on sqs beside rabbitmq", slices.Concat(sqs, []string{"--set", "config.flatActors.transport=sqs"}),
			[]string{"flat-actor.yaml", "hello-actor.yaml", "flat-actor-0.5.yaml"}},
		// 0.3 actors on two transports, as before flat actors: the notes
		// name no flat actor without a transport chosen for it.
		notesCase{"rabbitmq and sqs, no flat actors' transport", sqs, []string{"hello-actor.yaml", "flat-actor-0.5.yaml"}},
		notesCase{"sqs alone", slices.Concat(sqs, []string{"--set", "config.transports.rabbitmq.enabled=false"}), []string{"flat-actor.yaml", "flat-actor-0.5.yaml"}},
		notesCase{"one transport, named queue1", []string{"-f", valuesFile("queue1", `config:
  transports:
    rabbitmq: null
    queue1:
      type: sqs
      config: {region: eu-west-1, accountId: "123456789012"}
`)}, []string{"flat-actor.yaml"}},
		notesCase{"no transport enabled", []string{"--set", "config.transports.rabbitmq.enabled=false"}, []string{}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Another release's name: helm checks the cluster-wide objects
			// of the chart against those other tests installed.
			out, err := env.Helm(slices.Concat([]string{"install", "asya-notes", "./chart", "-n", "e2e-notes", "--dry-run=client",
				"--disable-openapi-validation", "--set", "compositeController.name=asya-notes"}, testenv.BrokerUser, generateOffline, tc.args)...)
			if err != nil {
				t.Fatal(err)
			}
			manifest, notes, ok := strings.Cut(out, "\nNOTES:\n")
			if !ok {
				t.Fatalf("helm install --dry-run printed no notes:\n%s", out)
			}
			_, manifest, _ = strings.Cut(manifest, "\nMANIFEST:\n")
			docs, err := testenv.SplitYAML([]byte(manifest), "helm install --dry-run")
			if err != nil {
				t.Fatal(err)
			}
			var rendered string
			for _, d := range docs {
				if c := testenv.Str(d, "data", "config.yaml"); testenv.Str(d, "kind") == "ConfigMap" && c != "" {
					rendered = c
				}
			}
			cfg, err := config.Parse([]byte(rendered))
			if err != nil {
				t.Fatalf("the release's configuration: %v\n%s", err, rendered)
			}
			cfgPath := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(cfgPath, []byte(rendered), 0o600); err != nil {
				t.Fatal(err)
			}
			enabled := cfg.EnabledNames()
			// fits checks the AsyncActors of the file at path.
			fits := func(what, path string) {
				actors, err := testenv.ReadYAMLDocs(path)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				n := 0
				for _, a := range actors {
					if testenv.Str(a, "kind") != "AsyncActor" {
						continue
					}
					n++
					transport := testenv.Str(a, "spec", "transport")
					if transport == "" && testenv.Str(a, "spec", "actor") != "" {
						transport = cfg.FlatActors.Transport
					}
					if !slices.Contains(enabled, transport) {
						t.Errorf("%s: AsyncActor %s runs on transport %q, which the release does not enable (enabled: %v)",
							what, testenv.Str(a, "metadata", "name"), transport, enabled)
					}
				}
				if n == 0 {
					t.Errorf("%s holds no AsyncActor", what)
				}
				cmd := exec.Command(env.SyncBin, "render", "-f", path, "--config", cfgPath)
				cmd.Env = append(os.Environ(), "ASYA_SYNC_CONFIG=")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("%s: asya-sync render on the release's configuration: %v\n%s", what, err, out)
				}
			}
			suggested := []string{}
			for _, line := range strings.Split(notes, "\n") {
				if _, rest, ok := strings.Cut(line, "kubectl apply -f examples/"); ok {
					file, _, _ := strings.Cut(rest, " ")
					suggested = append(suggested, file)
					fits("examples/"+file, filepath.Join(env.Root, "examples", file))
				}
			}
			switch {
			case tc.want != nil && !slices.Equal(suggested, tc.want):
				t.Errorf("the notes suggest %v, want %v:\n%s", suggested, tc.want, notes)
			case len(enabled) > 0 && len(suggested) == 0:
				t.Errorf("the notes suggest no actor, with %v enabled:\n%s", enabled, notes)
			case len(enabled) == 0 && !strings.Contains(notes, "No transport is enabled"):
				t.Errorf("the notes do not say that no transport is enabled:\n%s", notes)
			}
		})
	}
}
