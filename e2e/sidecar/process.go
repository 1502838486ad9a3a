package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

const (
	// runtimeReadyWait bounds the wait for the runtime, at start (the real
	// sidecar's default) and after losing it.
	runtimeReadyWait = 5 * time.Minute
	// brokerTimeout bounds the publishes, ack or requeue of one message.
	brokerTimeout = 30 * time.Second
)

// sidecar moves the messages of one actor's queue through its runtime.
type sidecar struct {
	cfg config
	rt  runtimeClient
	q   transport
	log *slog.Logger
	// each finishes one message: handle for the 0.3 sidecar, the current
	// generation's router otherwise (current_process.go). run sets it.
	each func(ctx context.Context, m *message) error
	// readyWait bounds the wait for the runtime (runtimeReadyWait for the
	// 0.3 sidecar, ASYA_RUNTIME_READY_TIMEOUT for the current one).
	readyWait time.Duration
}

// plan is what becomes of one message.
type plan struct {
	id, outcome, note string // outcome: routed, empty, error, timeout, consumed, dropped
	sends             []dispatch
	// fatal stops the sidecar once the message is done: after a runtime
	// timeout the real sidecar exits, since the runtime may still be busy.
	fatal error
}

// loop takes one message at a time until ctx ends (SIGTERM); the message
// in hand is always finished first.
func (s *sidecar) loop(ctx context.Context) error {
	if err := s.awaitRuntime(ctx); err != nil {
		return err
	}
	for failures := 0; ; {
		m, err := s.q.receive(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			failures++
			wait := min(time.Second<<min(failures-1, 5), 30*time.Second)
			s.log.Error("receive failed", "queue", s.cfg.queue(s.cfg.Actor), "error", err, "retry_in", wait)
			sleep(ctx, wait)
			continue
		}
		failures = 0
		switch err := s.each(ctx, m); {
		case errors.Is(err, errRuntimeUnavailable):
			if err := s.awaitRuntime(ctx); err != nil {
				return err
			}
		case errors.Is(err, errRuntimeTimeout):
			return err
		case err != nil:
			sleep(ctx, time.Second)
		}
	}
}

// awaitRuntime waits for the runtime; an ended ctx is no error.
func (s *sidecar) awaitRuntime(ctx context.Context) error {
	if s.rt.ready() {
		return nil
	}
	s.log.Info("waiting for the runtime", "socket", s.rt.socket)
	if err := s.rt.awaitRuntime(ctx, s.readyWait); ctx.Err() != nil {
		return nil
	} else if err != nil {
		return err
	}
	s.log.Info("runtime ready", "socket", s.rt.socket)
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// handle finishes one message even when ctx ends meanwhile: it publishes
// what the plan sends and acks only once all of it is confirmed. A
// message it cannot finish goes back to the queue.
func (s *sidecar) handle(ctx context.Context, m *message) error {
	p, err := s.decide(m.Body)
	work, cancel := context.WithTimeout(context.WithoutCancel(ctx), brokerTimeout)
	defer cancel()
	for i := 0; err == nil && i < len(p.sends); i++ {
		if err = s.q.send(work, p.sends[i].Actor, p.sends[i].Body); err != nil {
			err = fmt.Errorf("publish to %s: %w", s.cfg.queue(p.sends[i].Actor), err)
		}
	}
	if err != nil {
		s.log.Warn("message", "id", p.id, "outcome", "requeued", "error", err)
		return errors.Join(err, s.q.requeue(work, m))
	}
	if ctx.Err() != nil { // stopping: let nothing more in before the ack
		if err := s.q.stopReceiving(); err != nil {
			s.log.Warn("stop receiving", "error", err)
		}
	}
	if err := s.q.ack(work, m); err != nil {
		s.log.Error("ack failed; the message will come again", "id", p.id, "error", err)
	}
	to := make([]string, len(p.sends))
	for i, d := range p.sends {
		to[i] = s.cfg.queue(d.Actor)
	}
	level := slog.LevelInfo
	if p.outcome != "routed" && p.outcome != "consumed" && p.outcome != "empty" {
		level = slog.LevelWarn
	}
	s.log.Log(ctx, level, "message", "id", p.id, "outcome", p.outcome, "to", to, "note", p.note)
	return p.fatal
}

// decide calls the runtime when the message is for this actor and says
// where everything goes. Its only error is errRuntimeUnavailable.
func (s *sidecar) decide(body []byte) (plan, error) {
	env, err := parseEnvelope(body)
	switch {
	case err != nil:
		return s.reject(body, "", err.Error()), nil
	case s.cfg.IsEndActor:
		return s.consume(body, env.ID)
	case env.Route.currentActor() != s.cfg.Actor:
		return s.reject(body, env.ID, fmt.Sprintf("Route mismatch: message routed to wrong actor (expected: %s, actual: %s)",
			s.cfg.Actor, env.Route.currentActor())), nil
	}
	results, err := s.rt.call(body)
	switch {
	case errors.Is(err, errRuntimeUnavailable):
		return plan{id: env.ID}, err
	case err != nil:
		p := s.reject(body, env.ID, err.Error())
		if errors.Is(err, errRuntimeTimeout) {
			p.outcome, p.fatal = "timeout", err
		}
		return p, nil
	case len(results) == 0:
		// No results ends the route: the envelope as it came goes to happy-end.
		return plan{id: env.ID, outcome: "empty", note: "no results: the envelope ends at happy-end",
			sends: []dispatch{{Actor: s.cfg.HappyEnd, Kind: kindHappy, Body: body}}}, nil
	}
	p := plan{id: env.ID, outcome: "routed", sends: routeResults(env, body, results, ends{s.cfg.HappyEnd, s.cfg.ErrorEnd})}
	if p.sends[len(p.sends)-1].Kind == kindError {
		p.outcome = "error"
	}
	return p, nil
}

// consume is an end actor's part: the runtime gets the envelope, its
// answer is only logged, and nothing is routed.
func (s *sidecar) consume(body []byte, id string) (plan, error) {
	p := plan{id: id, outcome: "consumed"}
	results, err := s.rt.call(body)
	switch {
	case errors.Is(err, errRuntimeUnavailable):
		return p, err
	case errors.Is(err, errRuntimeTimeout):
		p.outcome, p.fatal = "timeout", err
	case err != nil:
		p.note = err.Error()
	}
	for _, raw := range results {
		var r result
		if decodeObject(raw, &r) == nil && r.Error != "" {
			p.note = "handler error: " + r.Error + " " + string(r.Details)
		}
	}
	return p, nil
}

// reject sends the message to the error end with the reason; the error
// end itself only logs it, or it would go round for ever.
func (s *sidecar) reject(body []byte, id, reason string) plan {
	if s.cfg.IsEndActor && s.cfg.Actor == s.cfg.ErrorEnd {
		return plan{id: id, outcome: "dropped", note: fmt.Sprintf("%s: %.200s", reason, body)}
	}
	return plan{id: id, outcome: "error", note: reason, sends: []dispatch{errorDispatch(body, reason, nil, s.cfg.ErrorEnd)}}
}
