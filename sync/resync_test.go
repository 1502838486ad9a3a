package sync

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

// resyncClaim is the sentence of docs/performance.md ("Queues") that says
// what a steady-state resync costs the broker; the test reads its numbers.
var resyncClaim = regexp.MustCompile(`every (\d+) s with the chart's ` + "`resyncPeriodSeconds`" +
	`[^.]*?reused for (\d+) s.*?cached for ` + "`queueCacheTTL`" + `, (\d+) minutes by default.*?` +
	`over (\d+) resyncs one actor costs (\d+) counts reads and (\d+) ensures`)

// TestSteadyResyncBrokerCalls: docs/performance.md's account of the broker
// calls of a steady-state resync is the code's. Its periods are the
// chart's resync period and the code's cache constants, and its call
// counts are what resyncs of one actor at that period, against the real
// RabbitMQ, make: a counts read on every resync (the counts are reused
// for less than the period) and an ensure once per queueCacheTTL. The
// status stays the same while the queue is idle and changes, once, with
// the resync after a message arrives.
func TestSteadyResyncBrokerCalls(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := resyncClaim.FindStringSubmatch(strings.Join(strings.Fields(string(doc)), " "))
	if m == nil {
		t.Fatalf("docs/performance.md has no sentence matching %s", resyncClaim)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	period, countsFor, ensureMinutes, resyncs, wantCounts, wantEnsures := n(1), n(2), n(3), n(4), n(5), n(6)
	if chart := chartResyncPeriod(t); period != chart {
		t.Errorf("the doc says a resync every %d s; the chart's resyncPeriodSeconds is %d", period, chart)
	}
	if got := time.Duration(countsFor) * time.Second; got != brokers.CountsTTL {
		t.Errorf("the doc says counts are reused for %v; brokers.CountsTTL is %v", got, brokers.CountsTTL)
	}
	if got := time.Duration(ensureMinutes) * time.Minute; got != config.DefaultQueueCacheTTL {
		t.Errorf("the doc says queueCacheTTL defaults to %v; config.DefaultQueueCacheTTL is %v", got, config.DefaultQueueCacheTTL)
	}

	conn := testenv.Rabbit(t)
	clock := testenv.NewFakeClock()
	reg := prometheus.NewRegistry()
	cfg, err := config.Parse([]byte("transports: {rabbitmq: {type: rabbitmq, config: {host: 127.0.0.1, port: 5672, exchange: asya-test}}}"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := brokers.Open(cfg.Enabled(), cfg.QueueCacheTTL.Duration, brokers.Options{Now: clock.Now, Metrics: brokers.NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	h := &Handler{Config: cfg, Transports: set, Script: testScript, FlatScript: testFlatScript, Actors: noOtherActors{}, Secrets: secretsExist{}, Now: clock.Now}
	actor := testenv.UniqueName("resync")
	queue := transport.QueueName(actor)
	t.Cleanup(func() { testenv.DeleteQueue(t, conn, queue) })

	req := actorRequest(t, actor)
	answer := func() string {
		t.Helper()
		resp, err := h.Answer(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status.TransportStatus != "Ready" {
			t.Fatalf("status %+v, want the queue ready", resp.Status)
		}
		req.Actor.Status = *resp.Status // Metacontroller stores it
		b, _ := json.Marshal(resp.Status)
		return string(b)
	}
	first := answer() // the actor is new: its queue is ensured and counted
	before := operations(t, reg)
	for i := 1; i <= resyncs; i++ {
		clock.Advance(time.Duration(period) * time.Second)
		if got := answer(); got != first {
			t.Fatalf("resync %d of an idle queue changed the status:\n%s\nwas\n%s", i, got, first)
		}
	}
	after := operations(t, reg)
	if got := after["counts"] - before["counts"]; got != wantCounts {
		t.Errorf("%d resyncs read the counts %d times; the doc says %d", resyncs, got, wantCounts)
	}
	if got := after["ensure"] - before["ensure"]; got != wantEnsures {
		t.Errorf("%d resyncs ensured the queue %d times; the doc says %d", resyncs, got, wantEnsures)
	}

	// Traffic: the next resync reads the new count and writes it, once.
	testenv.PublishBody(t, conn, queue, []byte("{}"))
	clock.Advance(time.Duration(period) * time.Second)
	busy := answer()
	if busy == first || req.Actor.Status.QueuedMessages == nil || *req.Actor.Status.QueuedMessages != 1 {
		t.Errorf("the resync after a message: status %s, want queuedMessages 1", busy)
	}
	if again := answer(); again != busy {
		t.Errorf("the sync the status write triggers changed it again:\n%s\nwas\n%s", again, busy)
	}
}

// operations counts the broker operations of the transports, by operation.
func operations(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "asya_sync_transport_operation_duration_seconds" {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "operation" {
					out[l.GetValue()] += int(metric.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return out
}

// chartResyncPeriod is the chart's compositeController.resyncPeriodSeconds.
func chartResyncPeriod(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "chart", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		CompositeController struct {
			ResyncPeriodSeconds int `json:"resyncPeriodSeconds"`
		} `json:"compositeController"`
	}
	if err := sigsyaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	return values.CompositeController.ResyncPeriodSeconds
}
