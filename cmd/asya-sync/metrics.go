package main

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asya-sh/asya-sync/internal/version"
)

// DefaultActorStatusWindow is how long a replica keeps counting an actor
// after its last sync: several resync periods (60 s by default), so that an
// actor whose syncs the Service spreads over the replicas stays counted.
const DefaultActorStatusWindow = 10 * time.Minute

// addServiceMetrics registers what the serving process reports besides the
// hook calls: its build, Metacontroller's webhook timeout (which the hook
// latency alert compares against) and the actors by status.
func (m *metrics) addServiceMetrics(hookTimeout, actorWindow time.Duration) {
	build := version.Get()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "asya_sync_build_info",
		Help:        "Always 1; the labels say which build is running, as asya-sync version prints it.",
		ConstLabels: prometheus.Labels{"version": build.Version, "commit": build.Commit, "goversion": build.GoVersion},
	})
	buildInfo.Set(1)
	timeout := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "asya_sync_hook_timeout_seconds",
		Help: "Metacontroller's webhook timeout for the hooks, as configured (--hook-timeout).",
	})
	timeout.Set(hookTimeout.Seconds())
	m.actors = newActorStatuses(actorWindow, time.Now)
	m.registry.MustRegister(buildInfo, timeout, m.actors)
}

// actorStatuses counts actors by the status this replica last returned for
// them (asya_sync_actors). An actor is forgotten when this replica has not
// synced it for the window, and at once when this replica finalizes it.
// Replicas count independently: each counts the actors it answered, so
// across replicas the fleet is max by (status), not the sum.
type actorStatuses struct {
	window time.Duration
	now    func() time.Time
	desc   *prometheus.Desc

	mu   sync.Mutex
	last map[string]actorStatus // by namespace/name
}

type actorStatus struct {
	status string
	at     time.Time
}

func newActorStatuses(window time.Duration, now func() time.Time) *actorStatuses {
	return &actorStatuses{
		window: window, now: now, last: map[string]actorStatus{},
		desc: prometheus.NewDesc("asya_sync_actors",
			"Actors by the status this replica last returned for them, among those it synced within the window (--actor-status-window).",
			[]string{"status"}, nil),
	}
}

// record notes the status a sync or finalize call returned for an actor.
func (a *actorStatuses) record(hook string, code int, out outcome) {
	if a == nil || code != http.StatusOK || out.name == "" || out.result == "" || (hook != "sync" && hook != "finalize") {
		return
	}
	key := out.namespace + "/" + out.name
	a.mu.Lock()
	defer a.mu.Unlock()
	if out.result == "finalized" {
		delete(a.last, key)
		return
	}
	a.last[key] = actorStatus{status: out.result, at: a.now()}
}

func (a *actorStatuses) Describe(ch chan<- *prometheus.Desc) { ch <- a.desc }

// Collect forgets the actors not synced within the window and counts the
// others by status.
func (a *actorStatuses) Collect(ch chan<- prometheus.Metric) {
	byStatus := map[string]int{}
	a.mu.Lock()
	cutoff := a.now().Add(-a.window)
	for key, s := range a.last {
		if s.at.Before(cutoff) {
			delete(a.last, key)
			continue
		}
		byStatus[s.status]++
	}
	a.mu.Unlock()
	for status, n := range byStatus {
		ch <- prometheus.MustNewConstMetric(a.desc, prometheus.GaugeValue, float64(n), status)
	}
}
