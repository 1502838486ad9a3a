package sync

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/config"
)

// listedActors is the API server as readClaimants sees it: the actors it
// answers, or an error, and the lists it was asked for.
type listedActors struct {
	actors []map[string]any
	err    error
	asked  []string
}

func (l *listedActors) ListActors(_ context.Context, namespace, selector string) (hook.ActorGroup, error) {
	l.asked = append(l.asked, namespace+"?"+selector)
	if l.err != nil {
		return nil, l.err
	}
	data, _ := json.Marshal(map[string]any{"items": l.actors})
	return hook.DecodeActorList(data)
}

// TestClaimantsRead: with watch.namesakes read the service lists the
// actors of the queue's claim itself, by the field selector that returns
// them alone; an older namesake owns the queue. A list that fails leaves
// the sync to the actor alone, said in TransportReady, and keeps a
// finalize from releasing the queue.
func TestClaimantsRead(t *testing.T) {
	older := actorObject(false)
	older["metadata"] = map[string]any{"name": "echo", "namespace": "other", "uid": "u-older", "creationTimestamp": "2026-11-28T10:00:00Z"}
	flat := actorObject(false)
	flat["spec"] = map[string]any{"actor": "doubler", "image": "python:3.13", "handler": "handlers.double"}
	for _, tc := range []struct {
		name       string
		parent     map[string]any
		finalizing bool
		lister     *listedActors
		sent       map[string]any // the AsyncActor group Metacontroller sent, if any
		wantAsked  string
		wantStatus string
		wantNote   string // in TransportReady's message
		finalized  bool
	}{
		{name: "nested: namesakes in every namespace, the older owns", parent: actorObject(false),
			lister: &listedActors{actors: []map[string]any{older, actorObject(false)}}, wantAsked: "?metadata.name=echo", wantStatus: "TransportError"},
		{name: "flat: twins of its spec.actor in its namespace", parent: flat,
			lister: &listedActors{actors: []map[string]any{flat}}, wantAsked: "ml?spec.actor=doubler"},
		{name: "list fails: the actor alone, and why", parent: actorObject(false),
			lister: &listedActors{err: errors.New("asyncactors is forbidden")}, wantAsked: "?metadata.name=echo",
			wantNote: "actors claiming the queue not read: asyncactors is forbidden"},
		{name: "list fails at finalize: the queue is kept", parent: actorObject(true), finalizing: true,
			lister: &listedActors{err: errors.New("timeout")}, wantAsked: "?metadata.name=echo", wantStatus: "Terminating",
			wantNote: "which other actors claim it: timeout"},
		{name: "finalize, alone: released", parent: actorObject(true), finalizing: true,
			lister: &listedActors{}, wantAsked: "?metadata.name=echo", wantStatus: "Terminating", finalized: true},
		{name: "actors sent by Metacontroller: used, no list", parent: actorObject(false), sent: map[string]any{}, lister: &listedActors{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("flatActors: {transport: mq}\ntransports: {mq: {type: rabbitmq, config: {host: mq}}}"))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			h := &Handler{Config: cfg, Script: testScript, FlatScript: testFlatScript, Actors: tc.lister, Secrets: secretsExist{}, Now: func() time.Time { return now }}
			body := map[string]any{"parent": tc.parent, "children": map[string]any{}, "related": map[string]any{}, "finalizing": tc.finalizing}
			if tc.sent != nil {
				body["related"] = map[string]any{"AsyncActor.asya.sh/v1alpha1": tc.sent}
			}
			resp, err := h.Answer(context.Background(), DecodeBody(t, body))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tc.lister.asked, ","); got != tc.wantAsked {
				t.Errorf("listed %q, want %q", got, tc.wantAsked)
			}
			if tc.wantStatus != "" && resp.Status.Status != tc.wantStatus {
				t.Errorf("status %q, want %q: %+v", resp.Status.Status, tc.wantStatus, resp.Status.Conditions)
			}
			msg := conditionIn(resp, "TransportReady").Message
			if (tc.wantNote != "") != (strings.Contains(msg, "not read") || strings.Contains(msg, "kept until")) || !strings.Contains(msg, tc.wantNote) {
				t.Errorf("TransportReady message %q, want the note %q", msg, tc.wantNote)
			}
			if tc.finalizing && resp.Finalized != tc.finalized {
				t.Errorf("finalized %v, want %v", resp.Finalized, tc.finalized)
			}
		})
	}
}

// TestClaimantsKept: an owner's claimants are read once per TTL (and again
// for a new generation); a standby reads on every call, and so does a
// finalize.
func TestClaimantsKept(t *testing.T) {
	cfg, err := config.Parse([]byte("transports: {mq: {type: rabbitmq, config: {host: mq}}}"))
	if err != nil {
		t.Fatal(err)
	}
	older := actorObject(false)
	older["metadata"] = map[string]any{"name": "echo", "namespace": "other", "uid": "u-older", "creationTimestamp": "2026-11-28T10:00:00Z"}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	call := func(h *Handler, parent map[string]any, finalizing bool) {
		t.Helper()
		body := map[string]any{"parent": parent, "children": map[string]any{}, "related": map[string]any{}, "finalizing": finalizing}
		if _, err := h.Answer(context.Background(), DecodeBody(t, body)); err != nil {
			t.Fatal(err)
		}
	}
	newer := func(generation int) map[string]any {
		a := actorObject(false)
		a["metadata"].(map[string]any)["generation"] = generation
		return a
	}
	for _, tc := range []struct {
		name   string
		others []map[string]any
		calls  func(h *Handler)
		lists  int
	}{
		{"owner: once per TTL", nil, func(h *Handler) {
			call(h, newer(1), false)
			call(h, newer(1), false)
			now = now.Add(4 * time.Minute)
			call(h, newer(1), false)
			now = now.Add(2 * time.Minute)
			call(h, newer(1), false)
		}, 2},
		{"owner: a new generation reads again", nil, func(h *Handler) {
			call(h, newer(1), false)
			call(h, newer(2), false)
		}, 2},
		{"standby: every call", []map[string]any{older}, func(h *Handler) {
			call(h, newer(1), false)
			call(h, newer(1), false)
		}, 2},
		{"finalize: always", nil, func(h *Handler) {
			call(h, newer(1), false)
			call(h, actorObject(true), true)
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lister := &listedActors{actors: tc.others}
			h := &Handler{Config: cfg, Script: testScript, FlatScript: testFlatScript, Actors: lister, Secrets: secretsExist{},
				Claimants: NewClaimantsCache(5 * time.Minute), Now: func() time.Time { return now }}
			tc.calls(h)
			if len(lister.asked) != tc.lists {
				t.Errorf("%d lists, want %d", len(lister.asked), tc.lists)
			}
		})
	}
}
