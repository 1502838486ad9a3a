package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/asya-sh/asya-sync/api/hook"
	hooksync "github.com/asya-sh/asya-sync/sync"
)

// DefaultMaxBody bounds a hook request; Metacontroller sends the parent and
// every observed child, so a few MiB is already a very large actor.
const DefaultMaxBody = 8 << 20

// server is the HTTP shell around the hook handlers.
type server struct {
	hooks    *hooksync.Handler
	log      zerolog.Logger
	metrics  *metrics
	maxBody  int64
	draining atomic.Bool
	// auth, when set, refuses hook calls without valid credentials
	// (auth.go); probes and metrics stay open.
	auth *credentials
	// admit, when set, limits the syncs computing at once (admission.go).
	admit *admission
	// background runs beside the listeners until shutdown (the actor
	// index's watch).
	background []func(context.Context)
}

// outcome is what a hook call produced, for logs and metrics.
type outcome struct {
	namespace, name string
	result          string
	body            any
}

type hookFunc func(ctx context.Context, body []byte) (outcome, error)

// badRequest marks an error as the caller's fault (HTTP 400).
type badRequest struct{ error }

func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Group(func(r chi.Router) {
		if s.auth != nil {
			r.Use(s.auth.require)
		}
		r.Use(lendBuffers)
		r.Post("/sync", s.hook("sync", s.admit.limit(s.handleSync)))
		r.Post("/finalize", s.hook("finalize", s.handleFinalize))
		r.Post("/customize", s.hook("customize", s.handleCustomize))
	})
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", s.readyz)
	r.Handle("/metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	return r
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// hook reads the body within the size limit, runs fn, and writes, logs and
// counts the answer.
func (s *server) hook(name string, fn hookFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code, out, err := s.serve(r, fn)
		elapsed := time.Since(start)
		// Counted before answering, so a caller that reads /metrics after
		// its answer sees its own call.
		s.metrics.observe(name, code, out.result, elapsed)
		s.metrics.actors.record(name, code, out)
		s.logCall(name, code, out, err, elapsed)
		answer := out.body
		if err != nil {
			answer = map[string]string{"error": err.Error()}
		}
		writeAnswer(w, r, code, answer)
	}
}

func (s *server) serve(r *http.Request, fn hookFunc) (int, outcome, error) {
	body, err := readBody(r, s.maxBody)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, outcome{result: "rejected"}, errors.New("request body exceeds " + byteSize(tooLarge.Limit))
	case err != nil:
		return http.StatusBadRequest, outcome{result: "rejected"}, err
	}
	out, err := fn(r.Context(), body)
	var bad badRequest
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest, outcome{result: "rejected"}, err
	case err != nil:
		return http.StatusInternalServerError, outcome{result: "failed"}, err
	}
	return http.StatusOK, out, nil
}

// readBody reads the request body within limit, into a buffer sized by
// Content-Length when the caller sent one, so a large request is not
// copied again and again as the buffer grows.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	size := min(max(r.ContentLength, 0), limit) + bytes.MinRead
	buf := bytes.NewBuffer(bodyBuffer(r, size))
	_, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, limit))
	return buf.Bytes(), err
}

func (s *server) logCall(name string, code int, out outcome, err error, elapsed time.Duration) {
	ev := s.log.Info()
	if err != nil {
		ev = s.log.Warn().Err(err)
	}
	ev.Str("hook", name).Str("actor", out.namespace+"/"+out.name).Int("code", code).
		Str("outcome", out.result).Dur("duration", elapsed).Msg("hook call")
}

func (s *server) handleSync(ctx context.Context, body []byte) (outcome, error) {
	return s.answer(ctx, body, false)
}

func (s *server) handleFinalize(ctx context.Context, body []byte) (outcome, error) {
	return s.answer(ctx, body, true)
}

// answer decodes a sync or finalize request and answers it. A
// CompositeController without a finalize hook sends deletions to sync,
// marked finalizing; they get the same teardown.
func (s *server) answer(ctx context.Context, body []byte, finalize bool) (outcome, error) {
	req, err := hook.DecodeSyncRequest(body)
	if err != nil {
		return outcome{}, badRequest{err}
	}
	req.Finalizing = req.Finalizing || finalize
	out := outcome{namespace: req.Actor.Namespace, name: req.Actor.Name}
	resp, err := s.hooks.Answer(ctx, req)
	if err != nil {
		return out, err
	}
	out.result, out.body = resp.Status.Status, resp
	if resp.Finalized {
		out.result = "finalized"
	}
	return out, nil
}

func (s *server) handleCustomize(_ context.Context, body []byte) (outcome, error) {
	req, err := hook.DecodeCustomizeRequest(body)
	if err != nil {
		return outcome{}, badRequest{err}
	}
	return outcome{namespace: req.Actor.Namespace, name: req.Actor.Name, result: "ok", body: s.hooks.Customize(req)}, nil
}

// writeAnswer writes a hook's answer with an ETag of its body. A caller
// that already holds that very answer (Metacontroller's webhook etag
// cache sends its ETag in If-None-Match) gets 304 and no body.
func writeAnswer(w http.ResponseWriter, r *http.Request, code int, v any) {
	body, err := encodeAnswer(r, v)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	tag := etag(body)
	w.Header().Set("ETag", tag)
	if code == http.StatusOK && r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// etag is a strong entity tag of body.
func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// metrics are the service's Prometheus metrics, in a registry of its own.
type metrics struct {
	registry *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	actors   *actorStatuses // nil unless addServiceMetrics ran
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "asya_sync_hook_calls_total", Help: "Hook calls by hook, HTTP code and outcome.",
		}, []string{"hook", "code", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "asya_sync_hook_duration_seconds", Help: "Hook call latency.",
			// Up to 32 s: past any webhook timeout Metacontroller is given.
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 17),
		}, []string{"hook"}),
	}
	m.registry.MustRegister(m.calls, m.duration, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(hook string, code int, outcome string, elapsed time.Duration) {
	m.calls.WithLabelValues(hook, strconv.Itoa(code), outcome).Inc()
	m.duration.WithLabelValues(hook).Observe(elapsed.Seconds())
}
