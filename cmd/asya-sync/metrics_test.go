package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/rs/zerolog"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/golden"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/internal/version"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

const (
	alertsFile    = "../../chart/files/alerts.yaml"
	dashboardFile = "../../chart/files/dashboard.json"
)

func TestActorStatusesCountLastStatusAndForget(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type call struct {
		after          time.Duration // since start
		hook, ns, name string
		code           int
		result         string
	}
	tests := []struct {
		name  string
		calls []call
		at    time.Duration
		want  map[string]float64
	}{
		{"last status wins", []call{
			{0, "sync", "a", "x", 200, "Creating"},
			{time.Minute, "sync", "a", "x", 200, "Running"},
			{time.Minute, "sync", "b", "x", 200, "Running"},
			{time.Minute, "sync", "b", "y", 200, "ImagePullError"},
		}, 2 * time.Minute, map[string]float64{"Running": 2, "ImagePullError": 1}},
		{"forgotten after the window without a sync", []call{
			{0, "sync", "a", "old", 200, "Running"},
			{6 * time.Minute, "sync", "a", "new", 200, "Running"},
		}, 11 * time.Minute, map[string]float64{"Running": 1}},
		{"forgotten at once when finalized", []call{
			{0, "sync", "a", "x", 200, "Running"},
			{time.Minute, "finalize", "a", "x", 200, "Terminating"},
			{2 * time.Minute, "finalize", "a", "x", 200, "finalized"},
		}, 2 * time.Minute, map[string]float64{}},
		{"errors, rejections and customize do not count", []call{
			{0, "sync", "a", "x", 500, "failed"},
			{0, "sync", "", "", 400, "rejected"},
			{0, "customize", "a", "y", 200, "ok"},
		}, time.Minute, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := start
			a := newActorStatuses(10*time.Minute, func() time.Time { return now })
			for _, c := range tt.calls {
				now = start.Add(c.after)
				a.record(c.hook, c.code, outcome{namespace: c.ns, name: c.name, result: c.result})
			}
			now = start.Add(tt.at)
			m := newMetrics()
			m.registry.MustRegister(a)
			got := map[string]float64{}
			for series, v := range testenv.Metrics(t, m.registry)["asya_sync_actors"] {
				got[strings.TrimSuffix(strings.TrimPrefix(series, `asya_sync_actors{status="`), `"}`)] = v
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("asya_sync_actors = %v, want %v", got, tt.want)
			}
		})
	}
}

// The service, as serve builds it, against the real RabbitMQ: what it
// exports after syncing an actor twice and finalizing it.
func TestServedMetrics(t *testing.T) {
	uri, err := amqp.ParseURI(testenv.RabbitURL())
	if err != nil {
		t.Fatal(err)
	}
	conn := testenv.Rabbit(t)
	password := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(password, []byte(uri.Password), 0o600); err != nil {
		t.Fatal(err)
	}
	// No API server here: the actor is its queue's only claimant.
	cfg, err := config.Parse(fmt.Appendf(nil, "watch: {namesakes: false}\ntransports:\n  mq: {type: rabbitmq, config: {host: %s, port: %d, username: %s, passwordFile: %s}}\n",
		uri.Host, uri.Port, uri.Username, password))
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics()
	m.addServiceMetrics(15*time.Second, time.Minute)
	opened, err := brokers.Open(cfg.Enabled(), cfg.QueueCacheTTL.Duration, brokers.Options{Metrics: brokers.NewMetrics(m.registry)})
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	s := &server{
		hooks:   &hooksync.Handler{Config: cfg, Transports: opened, Script: asyaruntime.Embedded(), Now: time.Now},
		log:     zerolog.New(io.Discard),
		metrics: m,
		maxBody: DefaultMaxBody,
	}
	mux := s.routes()
	actor := testenv.UniqueName("metrics")
	t.Cleanup(func() {
		if testenv.QueueExists(t, conn, "asya-"+actor) {
			testenv.DeleteQueue(t, conn, "asya-"+actor)
		}
	})
	parent := strings.Replace(strings.Replace(actorJSON, `"echo"`, `"`+actor+`"`, 1), `"rabbitmq"`, `"mq"`, 1)
	for range 2 {
		if code, body := serveOnce(mux, "/sync", `{"parent":`+parent+`}`); code != http.StatusOK {
			t.Fatalf("sync: %d %s", code, body)
		}
	}
	exported := testenv.Metrics(t, m.registry)
	for series, want := range map[string]float64{
		`asya_sync_hook_calls_total{code="200",hook="sync",outcome="Creating"}`:                                2,
		`asya_sync_actors{status="Creating"}`:                                                                  1,
		`asya_sync_transport_operation_duration_seconds_count{operation="ensure",outcome="ok",transport="mq"}`: 1,
		`asya_sync_queue_cache_lookups_total{result="miss",transport="mq"}`:                                    1,
		`asya_sync_queue_cache_lookups_total{result="hit",transport="mq"}`:                                     1,
		`asya_sync_broker_up{transport="mq"}`:                                                                  1,
		`asya_sync_hook_timeout_seconds`:                                                                       15,
	} {
		name := strings.SplitN(series, "{", 2)[0]
		if v, ok := exported[metricFamily(name)][series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	b := version.Get()
	if want := fmt.Sprintf("asya_sync_build_info{commit=%q,goversion=%q,version=%q}", b.Commit, b.GoVersion, b.Version); len(exported["asya_sync_build_info"]) != 1 || exported["asya_sync_build_info"][want] != 1 {
		t.Errorf("asya_sync_build_info: %v, want %s 1", exported["asya_sync_build_info"], want)
	}

	if code, body := serveOnce(mux, "/finalize", `{"parent":`+parent+`,"finalizing":true}`); code != http.StatusOK || !strings.Contains(body, `"finalized":true`) {
		t.Fatalf("finalize: %d %s", code, body)
	}
	if got := testenv.Metrics(t, m.registry)["asya_sync_actors"]; len(got) != 0 {
		t.Errorf("a finalized actor is still counted: %v", got)
	}
}

// Every metric the alerts and the dashboard name is one the service
// exports (or, for asya_sync_auth_failures_total, one its authentication
// layer exports), and every query of the dashboard parses.
func TestAlertsAndDashboardNameExportedMetrics(t *testing.T) {
	exported := map[string]bool{"asya_sync_auth_failures_total": true}
	m := newMetrics()
	m.addServiceMetrics(10*time.Second, time.Minute)
	brokers.NewMetrics(m.registry)
	for name := range describedMetrics(t, m.registry) {
		exported[name] = true
	}
	alerts, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	queries := dashboardQueries(t)
	sources := map[string]string{"alerts.yaml": string(alerts)}
	for _, q := range queries {
		sources["dashboard panel "+q.panel] += q.expr + "\n"
	}
	for source, text := range sources {
		for _, name := range regexp.MustCompile(`asya_sync_[a-z_]+`).FindAllString(text, -1) {
			if !exported[metricFamily(name)] {
				t.Errorf("%s names %s, which the service does not export", source, name)
			}
		}
	}

	// promtool parses PromQL: have it check the queries as recording rules.
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Missing(t, "promtool (Debian package prometheus; .ci/rules.sh installs it)", err)
	}
	var rules []map[string]string
	for i, q := range queries {
		rules = append(rules, map[string]string{"record": fmt.Sprintf("panel_%d", i), "expr": grafanaToPromQL(q.expr)})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool rejects a dashboard query: %v\n%s\n%s", err, out, data)
	}
}

// docs/dashboard.md describes every panel of the dashboard, for reviewers
// without a Grafana; go test -update regenerates it.
func TestDashboardSummary(t *testing.T) {
	var b strings.Builder
	b.WriteString("# The asya-sync dashboard\n\n")
	b.WriteString("Generated from `chart/files/dashboard.json` by `go test ./cmd/asya-sync -update`; do not edit.\n")
	b.WriteString("The chart ships it as a ConfigMap for the Grafana sidecar (`metrics.dashboard.enabled`).\n")
	b.WriteString("Every query parses with promtool and names only exported metrics (`TestAlertsAndDashboardNameExportedMetrics`).\n")
	for _, p := range dashboardPanels(t) {
		if p.Type == "row" {
			fmt.Fprintf(&b, "\n## %s\n", p.Title)
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s (%s panel, %d×%d at column %d", p.Title, p.Description, p.Type, p.GridPos.W, p.GridPos.H, p.GridPos.X)
		if p.FieldConfig.Defaults.Unit != "" {
			fmt.Fprintf(&b, ", unit %s", p.FieldConfig.Defaults.Unit)
		}
		b.WriteString(")\n\n")
		for _, target := range p.Targets {
			fmt.Fprintf(&b, "```promql\n%s\n```\n", target.Expr)
			if target.LegendFormat != "" {
				fmt.Fprintf(&b, "Legend: `%s`\n", target.LegendFormat)
			}
		}
	}
	golden.Bytes(t, "../../docs/dashboard.md", []byte(b.String()))
}

type dashboardPanel struct {
	Type, Title, Description string
	GridPos                  struct{ X, Y, W, H int }
	FieldConfig              struct {
		Defaults struct{ Unit string }
	}
	Targets []struct {
		Expr         string
		LegendFormat string
	}
}

func dashboardPanels(t *testing.T) []dashboardPanel {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Panels []dashboardPanel }
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if len(d.Panels) == 0 {
		t.Fatalf("%s has no panels", dashboardFile)
	}
	return d.Panels
}

type panelQuery struct{ panel, expr string }

func dashboardQueries(t *testing.T) []panelQuery {
	t.Helper()
	var out []panelQuery
	for _, p := range dashboardPanels(t) {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			out = append(out, panelQuery{p.Title, target.Expr})
		}
	}
	return out
}

// grafanaToPromQL replaces the Grafana variables the dashboard uses with
// values of the same type.
func grafanaToPromQL(expr string) string {
	return strings.ReplaceAll(expr, "$__rate_interval", "1m")
}

// metricFamily is the metric a series name belongs to (a histogram's
// _bucket, _sum and _count belong to it).
func metricFamily(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && strings.HasSuffix(base, "_seconds") {
			return base
		}
	}
	return name
}

// describedMetrics is every metric name the registry's collectors describe,
// whether or not they have a series yet.
func describedMetrics(t *testing.T, reg *prometheus.Registry) map[string]bool {
	t.Helper()
	descs := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(descs)
		close(descs)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names[m[1]] = true
	}
	return names
}

func serveOnce(h http.Handler, path, body string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}
