package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// envelope is an Asya envelope as it travels between actors.
type envelope struct {
	ID       string          `json:"id"`
	ParentID *string         `json:"parent_id,omitempty"`
	Route    route           `json:"route"`
	Headers  json.RawMessage `json:"headers,omitempty"`
	Payload  json.RawMessage `json:"payload"`
}

type route struct {
	Actors   []string        `json:"actors"`
	Current  int             `json:"current"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// currentActor is the actor the route points at, or "" past its end.
func (r route) currentActor() string {
	if r.Current >= 0 && r.Current < len(r.Actors) {
		return r.Actors[r.Current]
	}
	return ""
}

// result is one element of the runtime's response array.
type result struct {
	Route   *route          `json:"route"`
	Payload json.RawMessage `json:"payload"`
	Headers json.RawMessage `json:"headers"`
	Error   string          `json:"error"`
	Details json.RawMessage `json:"details"`
}

// dispatch is one message to publish: body to the queue of actor.
type dispatch struct {
	Actor string
	Kind  string // kindNext, kindHappy or kindError
	Body  []byte
}

const (
	kindNext  = "next"
	kindHappy = "happy-end"
	kindError = "error-end"
)

// ends names the end actors.
type ends struct{ Happy, Error string }

// parseEnvelope decodes a queue message; like the real sidecar it insists
// on JSON with an id.
func parseEnvelope(body []byte) (envelope, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return envelope{}, fmt.Errorf("Failed to parse message: %v", err)
	}
	if env.ID == "" {
		return envelope{}, errors.New("Envelope missing required 'id' field")
	}
	return env, nil
}

// routeResults decides where the runtime's results go: each to the actor
// its route points at, or to the happy end once the route is done. The
// first error or malformed element sends the input, as an error envelope,
// to the error end and ends the list; elements before it are still sent,
// in order, as the real sidecar does. No results route nothing.
func routeResults(in envelope, body []byte, results []json.RawMessage, to ends) []dispatch {
	var out []dispatch
	for i, raw := range results {
		var r result
		if err := decodeObject(raw, &r); err != nil {
			return append(out, errorDispatch(body, fmt.Sprintf("malformed runtime result %d: %v", i, err), nil, to.Error))
		}
		if r.Error != "" {
			return append(out, errorDispatch(body, r.Error, r.Details, to.Error))
		}
		if r.Route == nil || len(r.Route.Actors) == 0 || r.Route.Current < 0 {
			return append(out, errorDispatch(body, fmt.Sprintf("malformed runtime result %d: no valid route", i), nil, to.Error))
		}
		out = append(out, forward(in, r, i, len(results), to.Happy))
	}
	return out
}

// forward builds the envelope of one result. Fan-out results after the
// first get the id <id>-<index> and the input's id as parent_id.
func forward(in envelope, r result, i, n int, happyEnd string) dispatch {
	out := envelope{ID: in.ID, ParentID: in.ParentID, Route: *r.Route, Headers: r.Headers, Payload: r.Payload}
	if n > 1 && i > 0 {
		out.ID, out.ParentID = fmt.Sprintf("%s-%d", in.ID, i), &in.ID
	}
	if len(out.Headers) == 0 || bytes.Equal(out.Headers, []byte("null")) {
		out.Headers = in.Headers
	}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage("null")
	}
	if actor := out.Route.currentActor(); actor != "" {
		return dispatch{Actor: actor, Kind: kindNext, Body: mustJSON(out)}
	}
	return dispatch{Actor: happyEnd, Kind: kindHappy, Body: mustJSON(out)}
}

// errorDispatch sends the message to the error end in the real sidecar's
// shape: the input's id, parent_id, route and headers, and a payload of
// {"error", "details", "original_payload"}. Input that is not an envelope
// gets an empty id and a route of the error end alone.
func errorDispatch(body []byte, msg string, details json.RawMessage, errorEnd string) dispatch {
	var in envelope
	if decodeObject(body, &in) != nil {
		in = envelope{}
	}
	if len(in.Route.Actors) == 0 {
		in.Route = route{Actors: []string{errorEnd}}
	}
	payload := map[string]any{"error": msg}
	if len(details) > 0 && !bytes.Equal(details, []byte("null")) {
		payload["details"] = details
	}
	if len(in.Payload) > 0 {
		payload["original_payload"] = in.Payload
	}
	out := envelope{ID: in.ID, ParentID: in.ParentID, Route: in.Route, Headers: in.Headers, Payload: mustJSON(payload)}
	return dispatch{Actor: errorEnd, Kind: kindError, Body: mustJSON(out)}
}

// decodeObject decodes a JSON object into v; anything else is an error.
func decodeObject(raw []byte, v any) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(raw, v)
}

// mustJSON encodes values built from decoded JSON, which always encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
