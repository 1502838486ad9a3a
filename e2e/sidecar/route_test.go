package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRouteResults(t *testing.T) {
	to := ends{Happy: "happy-end", Error: "error-end"}
	in := `{"id":"m","route":{"actors":["a","b"],"current":0},"headers":{"trace":"t"},"payload":{"x":1}}`
	// want lists each dispatch as "actor kind id parent current payload".
	tests := []struct {
		name    string
		results []string
		want    []string
		wantErr string // the error-end payload's error, when the last one is an error
	}{
		{name: "no results", results: nil, want: nil},
		{name: "next actor", results: []string{`{"route":{"actors":["a","b"],"current":1},"payload":{"y":2}}`},
			want: []string{`b next m - 1 {"y":2}`}},
		{name: "route done", results: []string{`{"route":{"actors":["a","b"],"current":2},"payload":3}`},
			want: []string{`happy-end happy-end m - 2 3`}},
		{name: "fan-out", results: []string{
			`{"route":{"actors":["a","b"],"current":1},"payload":1}`,
			`{"route":{"actors":["a","b"],"current":1},"payload":2}`,
			`{"route":{"actors":["a","b","c"],"current":3},"payload":3}`,
		}, want: []string{`b next m - 1 1`, `b next m-1 m 1 2`, `happy-end happy-end m-2 m 3 3`}},
		{name: "handler error", results: []string{`{"error":"processing_error","details":{"type":"ValueError","message":"no"}}`},
			want:    []string{`error-end error-end m - 0 {"details":{"message":"no","type":"ValueError"},"error":"processing_error","original_payload":{"x":1}}`},
			wantErr: "processing_error"},
		{name: "error after a result", results: []string{
			`{"route":{"actors":["a","b"],"current":1},"payload":1}`, `{"error":"connection_error"}`, `{"payload":9}`,
		}, want: []string{`b next m - 1 1`, `error-end error-end m - 0 {"error":"connection_error","original_payload":{"x":1}}`},
			wantErr: "connection_error"},
		{name: "not an object", results: []string{`[1]`}, wantErr: "malformed runtime result 0: not a JSON object"},
		{name: "no route", results: []string{`{"payload":1}`}, wantErr: "malformed runtime result 0: no valid route"},
		{name: "empty route", results: []string{`{"route":{"actors":[]},"payload":1}`}, wantErr: "no valid route"},
		{name: "negative current", results: []string{`{"route":{"actors":["a"],"current":-1}}`}, wantErr: "no valid route"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, err := parseEnvelope([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			var raw []json.RawMessage
			for _, r := range tc.results {
				raw = append(raw, json.RawMessage(r))
			}
			got := routeResults(env, []byte(in), raw, to)
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, describe(t, got)); diff != "" {
					t.Errorf("dispatches (-want +got):\n%s", diff)
				}
			}
			if tc.wantErr != "" {
				last := got[len(got)-1]
				var e struct{ Payload struct{ Error string } }
				_ = json.Unmarshal(last.Body, &e)
				if last.Kind != kindError || !strings.Contains(e.Payload.Error, tc.wantErr) {
					t.Errorf("last dispatch %s %s, want an error %q", last.Kind, last.Body, tc.wantErr)
				}
			}
			for _, d := range got {
				if d.Kind != kindError && !strings.Contains(string(d.Body), `"headers":{"trace":"t"}`) {
					t.Errorf("%s lost the headers", d.Body)
				}
			}
		})
	}
}

func describe(t *testing.T, ds []dispatch) []string {
	var out []string
	for _, d := range ds {
		var e envelope
		if err := json.Unmarshal(d.Body, &e); err != nil {
			t.Fatal(err)
		}
		parent := "-"
		if e.ParentID != nil {
			parent = *e.ParentID
		}
		var payload any
		_ = json.Unmarshal(e.Payload, &payload)
		p, _ := json.Marshal(payload) // sorted keys
		out = append(out, strings.Join([]string{d.Actor, d.Kind, e.ID, parent, itoa(e.Route.Current), string(p)}, " "))
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRuntimeHeadersWin(t *testing.T) {
	in := []byte(`{"id":"m","route":{"actors":["a"],"current":0},"headers":{"h":1},"payload":1}`)
	env, _ := parseEnvelope(in)
	got := routeResults(env, in, []json.RawMessage{json.RawMessage(`{"route":{"actors":["a"],"current":1},"headers":{"h":2},"payload":1}`)}, ends{"happy", "error"})
	if !strings.Contains(string(got[0].Body), `"headers":{"h":2}`) {
		t.Errorf("%s, want the runtime's headers", got[0].Body)
	}
}

func TestErrorDispatch(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"envelope", `{"id":"m","parent_id":"p","route":{"actors":["a","b"],"current":1},"payload":[1]}`,
			`{"id":"m","parent_id":"p","route":{"actors":["a","b"],"current":1},"payload":{"error":"boom","original_payload":[1]}}`},
		{"not JSON", `nope`, `{"id":"","route":{"actors":["error-end"],"current":0},"payload":{"error":"boom"}}`},
		{"no route", `{"id":"m","payload":2}`, `{"id":"m","route":{"actors":["error-end"],"current":0},"payload":{"error":"boom","original_payload":2}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := errorDispatch([]byte(tc.body), "boom", nil, "error-end")
			if d.Actor != "error-end" || string(d.Body) != tc.want {
				t.Errorf("got %s %s\nwant %s", d.Actor, d.Body, tc.want)
			}
		})
	}
}

func TestParseEnvelope(t *testing.T) {
	for body, want := range map[string]string{
		``:                         "Failed to parse message",
		`[]`:                       "Failed to parse message",
		`{"route":{},"payload":1}`: "missing required 'id'",
		`{"id":"m","route":{"actors":["a"]},"payload":1}`: "",
	} {
		_, err := parseEnvelope([]byte(body))
		if (err == nil) != (want == "") || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("parseEnvelope(%q) = %v, want %q", body, err, want)
		}
	}
}
