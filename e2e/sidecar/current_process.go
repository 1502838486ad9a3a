package main

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// currentEnvelope is an envelope of the current generation, typed as the
// real sidecar's (pkg/envelopes at a7cec2a): what it does not know of an
// incoming envelope it drops, and so does this one.
type currentEnvelope struct {
	ID       string          `json:"id"`
	ParentID *string         `json:"parent_id,omitempty"`
	Route    currentRoute    `json:"route"`
	Headers  map[string]any  `json:"headers,omitempty"`
	Payload  json.RawMessage `json:"payload"`
	Status   *envStatus      `json:"status,omitempty"`
}

// currentRoute: prev are the actors done, curr the one at work (empty
// past the end), next the ones to come. The runtime shifts it.
type currentRoute struct {
	Prev []string `json:"prev"`
	Curr string   `json:"curr"`
	Next []string `json:"next"`
}

type envStatus struct {
	Phase       string       `json:"phase"`
	Reason      string       `json:"reason,omitempty"`
	Actor       string       `json:"actor"`
	Attempt     int          `json:"attempt"`
	MaxAttempts int          `json:"max_attempts"`
	CreatedAt   string       `json:"created_at"`
	UpdatedAt   string       `json:"updated_at"`
	DeadlineAt  string       `json:"deadline_at,omitempty"`
	Error       *statusError `json:"error,omitempty"`
}

type statusError struct {
	Message   string   `json:"message"`
	Type      string   `json:"type,omitempty"`
	MRO       []string `json:"mro,omitempty"`
	Traceback string   `json:"traceback,omitempty"`
}

const (
	phaseProcessing = "processing"
	phasePending    = "pending"
	phaseSucceeded  = "succeeded"
	phaseFailed     = "failed"
)

// currentRouter is what the current sidecar does with one message
// (internal/router/router.go at a7cec2a, ProcessMessage and what it
// calls): parse, check the route, mark the status processing, call the
// runtime, and route each frame as it arrives: to the queue of its
// route.curr, or to the sink when that is empty. A 204 sends the envelope
// to the sink; a handler error (400, 500, or an SSE error event) sends an
// error envelope to the sump. Every departure from the real router is
// named where it is.
//
// Not implemented, as asya-sync's actors never meet them: the gateway
// (progress reports, upstream events, the end actors' final report; the
// events are read and dropped), status.deadline_at (the real router sends
// an expired envelope to the sink as failed, and shortens the call to
// the time left), the route override header x-asya-route-override, the
// flow error handler header _on_error and the pause header x-asya-pause.
// An envelope using one of them is handled as if it did not.
type currentRouter struct {
	cfg config
	rt  httpRuntime
	q   transport
	log *slog.Logger
	now func() time.Time
	// stopFailsBroker: SIGTERM cancels the context the real router passes
	// to every call, the runtime's and the broker's. Its RabbitMQ calls
	// (amqp091-go v1.10.0) ignore a context, so a message in hand still
	// reaches the sump (its call cut short) and is acknowledged. Its SQS
	// calls honour it and fail: the message is neither sent on,
	// acknowledged nor requeued, and comes back after its visibility
	// timeout. Its Pub/Sub publish honours it too and fails, but its Ack
	// and Nack run on a context of their own: the message is nacked and
	// comes back at once. This router gives the broker calls a context
	// that ends the same way (the Pub/Sub transport's ack and requeue make
	// their own), so each broker shows what the real sidecar does. (When
	// the sump's queue URL is not yet known, the real one first sleeps
	// through its GetQueueUrl retries, minutes, until the kubelet kills
	// it; this one exits at once. The message comes back all the same.)
	stopFailsBroker bool
}

func newCurrentRouter(cfg config, q transport, log *slog.Logger) *currentRouter {
	return &currentRouter{
		cfg: cfg, rt: newHTTPRuntime(filepath.Join(cfg.SocketDir, socketName)), q: q, log: log,
		now: time.Now, stopFailsBroker: cfg.Transport == "sqs" || cfg.Transport == "pubsub",
	}
}

// outcome is what became of one message, for the log.
type outcome struct {
	id, what, note string
	to             []string
}

// handle finishes one message: acknowledged once what it routes is sent,
// requeued when a send fails. A runtime timeout is returned as
// errRuntimeTimeout before the acknowledgement, so that the sidecar exits
// 1 with the message unacknowledged, as the real one does (os.Exit):
// RabbitMQ redelivers it once the connection is gone, SQS after its
// visibility timeout.
func (c *currentRouter) handle(ctx context.Context, m *message) error {
	var broker context.Context
	var cancel context.CancelFunc
	if c.stopFailsBroker {
		broker, cancel = context.WithTimeout(ctx, brokerTimeout)
	} else {
		broker, cancel = context.WithTimeout(context.WithoutCancel(ctx), brokerTimeout)
	}
	defer cancel()
	o := &outcome{what: "routed"}
	err := c.process(ctx, broker, m.Body, o)
	switch {
	case errors.Is(err, errRuntimeTimeout):
		c.log.Error("message", "id", o.id, "outcome", "timeout", "to", o.to, "note", err.Error())
		return err
	case err != nil:
		c.log.Warn("message", "id", o.id, "outcome", "requeued", "to", o.to, "error", err)
		return errors.Join(err, c.q.requeue(broker, m))
	}
	if ctx.Err() != nil { // stopping: let nothing more in before the ack
		if err := c.q.stopReceiving(); err != nil {
			c.log.Warn("stop receiving", "error", err)
		}
	}
	if err := c.q.ack(broker, m); err != nil {
		c.log.Error("ack failed; the message will come again", "id", o.id, "error", err)
	}
	level := slog.LevelInfo
	if o.what != "routed" && o.what != "consumed" && o.what != "empty" && o.what != "retried" {
		level = slog.LevelWarn
	}
	c.log.Log(ctx, level, "message", "id", o.id, "outcome", o.what, "to", o.to, "note", o.note)
	return nil
}

// send publishes one envelope to the actor's queue.
func (c *currentRouter) send(ctx context.Context, o *outcome, actor string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := c.q.send(ctx, actor, body); err != nil {
		return fmt.Errorf("publish to %s: %w", c.cfg.queue(actor), err)
	}
	o.to = append(o.to, c.cfg.queue(actor))
	return nil
}

// process is ProcessMessage. ctx is the sidecar's, ended by SIGTERM;
// broker is for the broker calls. An error requeues the message.
func (c *currentRouter) process(ctx, broker context.Context, body []byte, o *outcome) error {
	var env currentEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		return c.reject(broker, o, body, fmt.Sprintf("Failed to parse message: %v", err))
	}
	o.id = env.ID
	if env.ID == "" {
		return c.reject(broker, o, body, "Message missing required 'id' field")
	}
	if c.cfg.IsEndActor {
		return c.consume(ctx, body, o)
	}
	if env.Route.Curr != c.cfg.Actor {
		return c.reject(broker, o, body, fmt.Sprintf("Route mismatch: message routed to wrong actor (expected: %s, actual: %s)",
			c.cfg.Actor, env.Route.Curr))
	}
	c.markProcessing(&env)
	in, err := json.Marshal(env)
	if err != nil {
		return err
	}
	var (
		frames int
		failed error // a send of a frame failed, or the sump send of an error frame
		halted bool
	)
	onFrame := func(f frame, i int) {
		if halted {
			return
		}
		frames++
		if f.Error != "" {
			failed, halted = c.handlerError(broker, o, &env, f), true
			return
		}
		if err := c.forward(broker, o, &env, f, i); err != nil {
			failed, halted = fmt.Errorf("failed to route response %d: %w", i, err), true
		}
	}
	call, done := plainCancel(ctx)
	defer done()
	err = c.rt.invoke(call, in, c.cfg.RuntimeTimeout, onFrame)
	switch {
	case err != nil:
		return c.callFailed(broker, o, &env, body, err)
	case failed != nil:
		return failed
	case frames == 0: // 204: the handler returned nothing
		o.what, o.note = "empty", "no frames: the envelope goes to the sink"
		return c.toSink(broker, o, env)
	}
	return nil
}

// plainCancel is ctx ended without its cause: the real sidecar ends its
// context with a plain cancel on SIGTERM, so a call cut short fails with
// "context canceled", which is what reaches the sump.
func plainCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	plain, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	return plain, func() { stop(); cancel() }
}

// markProcessing is the real router's ensureAndUpdateStatus, before the
// call: the runtime sees status.phase processing and this actor. The 0.5
// line says the attempts it allows; the 1.x one says 0 (it knows them
// once an error picks a policy) and stamps x-asya-first-attempt, which a
// policy's maxDuration counts from, on the first attempt of all.
func (c *currentRouter) markProcessing(env *currentEnvelope) {
	now := c.stamp()
	most := c.maxAttempts()
	if c.cfg.Current.Line == "1.x" {
		most = 0
		if _, ok := env.Headers[firstAttemptHeader]; !ok {
			if env.Headers == nil {
				env.Headers = map[string]any{}
			}
			env.Headers[firstAttemptHeader] = now
		}
	}
	if env.Status == nil {
		env.Status = &envStatus{Phase: phaseProcessing, Actor: c.cfg.Actor, Attempt: 1, MaxAttempts: most,
			CreatedAt: now, UpdatedAt: now}
		return
	}
	if env.Status.Actor != c.cfg.Actor {
		env.Status.Attempt = 1
	}
	env.Status.Phase, env.Status.Reason, env.Status.Actor = phaseProcessing, "", c.cfg.Actor
	env.Status.MaxAttempts, env.Status.UpdatedAt, env.Status.Error = most, now, nil
}

// firstAttemptHeader is the 1.x sidecar's HeaderFirstAttempt.
const firstAttemptHeader = "x-asya-first-attempt"

// maxAttempts is the 0.5 retry policy's, or 1 without one.
func (c *currentRouter) maxAttempts() int {
	if p := c.cfg.Current.Retry; p != nil {
		return p.MaxAttempts
	}
	return 1
}

func (c *currentRouter) stamp() string { return c.now().UTC().Format(time.RFC3339) }

// forward routes one frame (handleSuccessResponse and routeResponse):
// to route.curr's queue as pending for that actor, or to the sink as
// succeeded. The first frame keeps the envelope's id and, as in the real
// router, drops its parent_id; each later one gets a new UUID and the
// envelope's id as parent_id. The frame's headers replace the envelope's
// when it has any; its status only lends created_at (and, to the sink,
// actor and attempts). The status carries no deadline_at on, as in the
// real router.
func (c *currentRouter) forward(ctx context.Context, o *outcome, env *currentEnvelope, f frame, i int) error {
	id, parent := env.ID, (*string)(nil)
	if i > 0 {
		id, parent = newUUID(), &env.ID
	}
	in := f.Status
	if in == nil {
		in = env.Status
	}
	headers := env.Headers
	if f.Headers != nil {
		headers = make(map[string]any, len(f.Headers))
		for k, v := range f.Headers {
			headers[k] = v
		}
	}
	now := c.stamp()
	to, st := f.Route.Curr, &envStatus{Attempt: 1, MaxAttempts: 1, UpdatedAt: now, CreatedAt: now}
	if to != "" {
		st.Phase, st.Actor = phasePending, to
		if in != nil {
			st.CreatedAt = in.CreatedAt
		}
	} else {
		to, st.Phase, st.Reason, st.Actor = c.cfg.HappyEnd, phaseSucceeded, "Completed", c.cfg.Actor
		if in != nil {
			st.Actor, st.CreatedAt, st.Attempt, st.MaxAttempts = in.Actor, in.CreatedAt, in.Attempt, in.MaxAttempts
		}
	}
	return c.send(ctx, o, to, currentEnvelope{ID: id, ParentID: parent, Route: f.Route, Payload: f.Payload, Status: st, Headers: headers})
}

// toSink is sendToSinkQueue: the envelope itself, its status made
// succeeded unless it already ended.
func (c *currentRouter) toSink(ctx context.Context, o *outcome, env currentEnvelope) error {
	if env.Status == nil || (env.Status.Phase != phaseSucceeded && env.Status.Phase != phaseFailed) {
		now := c.stamp()
		created := now
		if env.Status != nil {
			created = env.Status.CreatedAt
		}
		env.Status = &envStatus{Phase: phaseSucceeded, Reason: "Completed", Actor: c.cfg.Actor, Attempt: 1, MaxAttempts: 1,
			CreatedAt: created, UpdatedAt: now}
	}
	return c.send(ctx, o, c.cfg.HappyEnd, env)
}

// handlerError is handleErrorResponse: the line's verdict
// (current_retry.go) retries the error, sends it to a 1.x policy's
// onExhausted, or ends it (failed). A retry goes back to this actor's own
// queue, delayed, with the next attempt's number; RabbitMQ cannot delay a
// message, so there (as in both real sidecars) the retry fails and the
// error ends after all, as a RuntimeError.
func (c *currentRouter) handlerError(ctx context.Context, o *outcome, env *currentEnvelope, f frame) error {
	v := c.decide(env, f.Details)
	env.Status.MaxAttempts = v.maxAttempts
	switch {
	case len(v.onExhausted) > 0:
		return c.onExhausted(ctx, o, env, f, v.onExhausted)
	case !v.retry:
		return c.failed(ctx, o, env, f, v.reason)
	}
	if err := c.retry(ctx, env, f, v.delay); err != nil {
		c.log.Warn("retry not sent; the error ends", "id", env.ID, "error", err)
		return c.failed(ctx, o, env, f, "RuntimeError")
	}
	o.what, o.note = "retried", fmt.Sprintf("%s: %s; attempt %d in %s", f.Error, f.Details.Message, env.Status.Attempt, v.delay)
	o.to = append(o.to, c.cfg.queue(c.cfg.Actor))
	return nil
}

// decide is the verdict of the sidecar's line on the error.
func (c *currentRouter) decide(env *currentEnvelope, d errorDetails) verdict {
	if c.cfg.Current.Line != "1.x" {
		return decide05(c.cfg.Current.Retry, env.Status.Attempt, d, rand.Float64)
	}
	var first time.Time
	if s, ok := env.Headers[firstAttemptHeader].(string); ok {
		first, _ = time.Parse(time.RFC3339, s)
	}
	return decide1x(c.cfg.Current.Policies, env.Status.Attempt, first, c.now(), d, rand.Float64)
}

// failedEnd is where an error that is not retried ends: the sump on the
// 0.5 line, the sink (phase failed) on the 1.x line, whose sink hands it
// to the sump.
func (c *currentRouter) failedEnd() string {
	if c.cfg.Current.Line == "1.x" {
		return c.cfg.HappyEnd
	}
	return c.cfg.ErrorEnd
}

// onExhausted is the 1.x router's routeOnExhausted: the envelope itself,
// its status failed (PolicyRouted) with the error and route.next the
// policy's actors, to the first of them. route.curr stays this actor, as
// in the real router.
func (c *currentRouter) onExhausted(ctx context.Context, o *outcome, env *currentEnvelope, f frame, to []string) error {
	o.what, o.note = "exhausted", fmt.Sprintf("%s: %s", f.Error, f.Details.Message)
	env.Route.Next = to
	env.Status.Phase, env.Status.Reason, env.Status.UpdatedAt = phaseFailed, "PolicyRouted", c.stamp()
	env.Status.Error = &statusError{Message: f.Details.Message, Type: f.Details.Type, MRO: f.Details.MRO, Traceback: f.Details.Traceback}
	return c.send(ctx, o, to[0], env)
}

// retry is retryMessage: the envelope, its status retrying with the
// error and the next attempt's number, to this actor's queue after delay.
// Like the real router it changes env's status first, so that when the
// send fails the sump sees the attempt it would have been.
func (c *currentRouter) retry(ctx context.Context, env *currentEnvelope, f frame, delay time.Duration) error {
	env.Status.Phase, env.Status.UpdatedAt = "retrying", c.stamp()
	env.Status.Error = &statusError{Message: f.Details.Message, Type: f.Details.Type, MRO: f.Details.MRO, Traceback: f.Details.Traceback}
	env.Status.Attempt++
	body, err := json.Marshal(env)
	if err != nil {
		return err
	}
	return c.q.sendDelayed(ctx, c.cfg.Actor, body, delay)
}

// failed ends a handler's error (sendRetryFailure) in the line's
// failedEnd: the envelope's id, parent_id and route as it came, the
// payload {error, details, original_payload}, the status failed with the
// reason, the attempts and the error's message, type, mro and traceback.
// No headers.
func (c *currentRouter) failed(ctx context.Context, o *outcome, env *currentEnvelope, f frame, reason string) error {
	o.what, o.note = "error", fmt.Sprintf("%s: %s", f.Error, f.Details.Message)
	payload := map[string]any{"error": f.Error}
	if f.Details.Message != "" || f.Details.Type != "" {
		payload["details"] = f.Details
	}
	if env.Payload != nil {
		var original any
		if json.Unmarshal(env.Payload, &original) == nil {
			payload["original_payload"] = original
		}
	}
	p, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	now := c.stamp()
	created, attempt, most := now, 1, 0
	if env.Status != nil {
		created, attempt, most = env.Status.CreatedAt, env.Status.Attempt, env.Status.MaxAttempts
	}
	return c.send(ctx, o, c.failedEnd(), currentEnvelope{ID: env.ID, ParentID: env.ParentID, Route: env.Route, Payload: p,
		Status: &envStatus{Phase: phaseFailed, Reason: reason, Actor: c.cfg.Actor, Attempt: attempt, MaxAttempts: most,
			CreatedAt: created, UpdatedAt: now, Error: &statusError{Message: f.Details.Message, Type: f.Details.Type,
				MRO: f.Details.MRO, Traceback: f.Details.Traceback}}})
}

// callFailed is handleRuntimeCallError: an SSE error event is a handler
// error; a timeout sends the message as it came to the sump and stops
// the sidecar (errRuntimeTimeout); anything else (no runtime on the
// socket, an answer that is not the protocol, SIGTERM cutting the call
// short) sends it to the sump with the error.
func (c *currentRouter) callFailed(ctx context.Context, o *outcome, env *currentEnvelope, body []byte, err error) error {
	var se *streamError
	if errors.As(err, &se) {
		return c.handlerError(ctx, o, env, se.frame)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		msg := fmt.Sprintf("Runtime timeout exceeded after %s", c.cfg.RuntimeTimeout)
		if err := c.toSump(ctx, o, body, msg); err != nil {
			c.log.Error("timeout not sent to the sump; exiting anyway", "id", env.ID, "error", err)
		}
		return fmt.Errorf("%w: %s", errRuntimeTimeout, msg)
	}
	o.what, o.note = "error", err.Error()
	return c.toSump(ctx, o, body, err.Error())
}

// reject sends a message the router cannot take to the sump. Like the
// real router it acknowledges the message even when that send fails.
// Departure: the sump's own sidecar drops such a message (logged) rather
// than send it to itself for ever; only a message that is no envelope of
// asya-sync's gets there.
func (c *currentRouter) reject(ctx context.Context, o *outcome, body []byte, reason string) error {
	o.what, o.note = "error", reason
	if c.cfg.IsEndActor && c.cfg.Actor == c.cfg.ErrorEnd {
		o.what, o.note = "dropped", fmt.Sprintf("%s: %.200s", reason, body)
		return nil
	}
	if err := c.toSump(ctx, o, body, reason); err != nil {
		c.log.Error("not sent to the sump", "id", o.id, "error", err)
	}
	return nil
}

// toSump is sendToSumpQueue: an error envelope made from the message as
// it came, with the route it had (or one at x-sump when it had none), the
// payload {error, original_payload}, and a failed status.
func (c *currentRouter) toSump(ctx context.Context, o *outcome, body []byte, reason string) error {
	// As in the real router, the id, parent_id and route come only from a
	// message that decodes whole; payload and status from what decoded.
	var in currentEnvelope
	decoded := json.Unmarshal(body, &in) == nil
	route := currentRoute{Prev: []string{}, Curr: "x-sump", Next: []string{}}
	if decoded && (in.Route.Curr != "" || len(in.Route.Prev) > 0 || len(in.Route.Next) > 0) {
		route = in.Route
	}
	payload := map[string]any{"error": reason}
	if in.Payload != nil {
		var original any
		if json.Unmarshal(in.Payload, &original) == nil {
			payload["original_payload"] = original
		}
	}
	now := c.stamp()
	created, actor := now, c.cfg.Actor
	if in.Status != nil {
		created = in.Status.CreatedAt
		if in.Status.Actor != "" {
			actor = in.Status.Actor
		}
	}
	out := map[string]any{
		"id": "", "route": route, "payload": payload,
		"status": map[string]any{"phase": phaseFailed, "actor": actor, "attempt": 1, "max_attempts": 1, "created_at": created, "updated_at": now},
	}
	if decoded {
		out["id"] = in.ID
	}
	if decoded && in.ParentID != nil {
		out["parent_id"] = *in.ParentID
	}
	return c.send(ctx, o, c.cfg.ErrorEnd, out)
}

// consume is an end actor's part (processEndActorEnvelope): the runtime
// gets the message as it came, whatever its route, and nothing is
// routed. A failed call requeues the message, as in the real router; a
// timeout stops the sidecar without sending anything.
func (c *currentRouter) consume(ctx context.Context, body []byte, o *outcome) error {
	o.what = "consumed"
	call, done := plainCancel(ctx)
	defer done()
	err := c.rt.invoke(call, body, c.cfg.RuntimeTimeout, func(f frame, _ int) {
		if f.Error != "" {
			o.note = fmt.Sprintf("handler error: %s %s", f.Error, f.Details.Message)
		}
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w after %s", errRuntimeTimeout, c.cfg.RuntimeTimeout)
	case err != nil:
		return fmt.Errorf("runtime error in end actor: %w", err)
	}
	return nil
}

// newUUID is a random (version 4) UUID, as the real router gives each
// frame after the first.
func newUUID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
