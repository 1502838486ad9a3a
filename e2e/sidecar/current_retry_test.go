package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The two lines' retry models against what each line's source and docs
// say (current_retry.go names them).

var (
	valueErr = errorDetails{Type: "ValueError", MRO: []string{"Exception"}}
	appErr   = errorDetails{Type: "handlers.AppError", MRO: []string{"RuntimeError", "Exception"}}
	half     = func() float64 { return 0.5 } // jitter's factor 1
)

func TestDecide05(t *testing.T) {
	p := &retryPolicy{Policy: "exponential", MaxAttempts: 3, InitialInterval: time.Second, MaxInterval: time.Minute, Coefficient: 3,
		NonRetryable: []string{"KeyError", "RuntimeError"}}
	one := &retryPolicy{Policy: "constant", MaxAttempts: 1, InitialInterval: time.Second, MaxInterval: time.Minute, Coefficient: 2}
	tests := []struct {
		name    string
		p       *retryPolicy
		attempt int
		err     errorDetails
		want    verdict
	}{
		{"no retry variable: ends at once", nil, 1, valueErr, verdict{reason: "RuntimeError", maxAttempts: 1}},
		{"one attempt: ends at once, listed or not", one, 1, valueErr, verdict{reason: "RuntimeError", maxAttempts: 1}},
		{"first failure: retried after the initial interval", p, 1, valueErr, verdict{retry: true, delay: time.Second, maxAttempts: 3}},
		{"second failure: times the coefficient", p, 2, valueErr, verdict{retry: true, delay: 3 * time.Second, maxAttempts: 3}},
		{"last attempt: spent", p, 3, valueErr, verdict{reason: "MaxRetriesExhausted", maxAttempts: 3}},
		{"listed type", p, 1, errorDetails{Type: "KeyError", MRO: []string{"LookupError", "Exception"}},
			verdict{reason: "NonRetryableFailure", maxAttempts: 3}},
		{"listed ancestor", p, 1, appErr, verdict{reason: "NonRetryableFailure", maxAttempts: 3}},
		{"a name is matched whole: AppError is not handlers.AppError", &retryPolicy{MaxAttempts: 2, InitialInterval: time.Second,
			MaxInterval: time.Minute, NonRetryable: []string{"AppError"}}, 1, appErr, verdict{retry: true, delay: time.Second, maxAttempts: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decide05(tc.p, tc.attempt, tc.err, half), cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryDelay05(t *testing.T) {
	p := retryPolicy{Policy: "exponential", InitialInterval: time.Second, MaxInterval: 10 * time.Second, Coefficient: 3}
	for failed, want := range map[int]time.Duration{1: time.Second, 2: 3 * time.Second, 3: 9 * time.Second, 4: 10 * time.Second} {
		if got := p.delay(failed, nil); got != want {
			t.Errorf("exponential, attempt %d: %v, want %v", failed, got, want)
		}
	}
	p.Policy = "constant"
	if got := p.delay(4, nil); got != time.Second {
		t.Errorf("constant: %v, want 1s", got)
	}
	p.Jitter = true
	for r, want := range map[float64]time.Duration{0: 500 * time.Millisecond, 0.5: time.Second, 0.99: 1490 * time.Millisecond} {
		if got := p.delay(1, func() float64 { return r }); got != want {
			t.Errorf("jitter %v: %v, want %v", r, got, want)
		}
	}
}

func TestDecide1x(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	set := &policySet{
		Policies: map[string]policy{
			"default":   {MaxAttempts: 3, Backoff: "exponential", InitialDelay: time.Second},
			"hard-fail": {MaxAttempts: 1},
			"patient":   {MaxAttempts: 10, Backoff: "constant", InitialDelay: 2 * time.Second, MaxDuration: time.Minute},
			"rescue":    {MaxAttempts: 2, OnExhausted: []string{"fixer", "x-sink"}},
		},
		Rules: []policyRule{
			{Errors: []string{"KeyError", "gone"}, Policy: "missing"}, // no such policy: passed over
			{Errors: []string{"mod.Timeout", "KeyError"}, Policy: "patient"},
			{Errors: []string{"AppError"}, Policy: "rescue"},
			{Errors: []string{"LookupError", "ValueError"}, Policy: "hard-fail"},
		},
	}
	keyErr := errorDetails{Type: "KeyError", MRO: []string{"LookupError", "Exception"}}
	timeout := errorDetails{Type: "mod.Timeout", MRO: []string{"Exception"}}
	tests := []struct {
		name    string
		set     *policySet
		attempt int
		first   time.Time
		err     errorDetails
		want    verdict
	}{
		{"neither variable: ends at once", nil, 1, time.Time{}, valueErr, verdict{reason: "RuntimeError"}},
		{"no rule and no default: ends at once", &policySet{Policies: map[string]policy{"p": {MaxAttempts: 5}}}, 1, time.Time{}, valueErr,
			verdict{reason: "RuntimeError"}},
		{"no rule: the default", set, 1, time.Time{}, errorDetails{Type: "OSError", MRO: []string{"Exception"}},
			verdict{retry: true, delay: time.Second, maxAttempts: 3}},
		{"default, second failure: doubled", set, 2, time.Time{}, errorDetails{Type: "OSError"}, verdict{retry: true, delay: 2 * time.Second, maxAttempts: 3}},
		{"default, last attempt: spent, to the sink", set, 3, time.Time{}, errorDetails{Type: "OSError"}, verdict{reason: "PolicyExhausted", maxAttempts: 3}},
		{"the first rule wins, by the type's own name", set, 1, now, keyErr, verdict{retry: true, delay: 2 * time.Second, maxAttempts: 10}},
		{"maxDuration spent before the attempts", set, 2, now.Add(-time.Minute), keyErr, verdict{reason: "PolicyExhausted", maxAttempts: 10}},
		{"maxDuration without the header: not counted", set, 2, time.Time{}, keyErr, verdict{retry: true, delay: 2 * time.Second, maxAttempts: 10}},
		{"a dotted pattern is a whole name", set, 1, now, timeout, verdict{retry: true, delay: 2 * time.Second, maxAttempts: 10}},
		{"a bare pattern matches the name's last part", set, 1, now, appErr, verdict{retry: true, maxAttempts: 2}},
		{"spent with onExhausted: routed there", set, 2, now, appErr, verdict{reason: "PolicyRouted", onExhausted: []string{"fixer", "x-sink"}, maxAttempts: 2}},
		{"an ancestor's name", set, 1, now, errorDetails{Type: "IndexError", MRO: []string{"LookupError", "Exception"}},
			verdict{reason: "PolicyExhausted", maxAttempts: 1}},
		{"maxAttempts 0 is one attempt", &policySet{Policies: map[string]policy{"default": {InitialDelay: time.Second}}}, 1, now, valueErr,
			verdict{reason: "PolicyExhausted", maxAttempts: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decide1x(tc.set, tc.attempt, tc.first, now, tc.err, half)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryDelay1x(t *testing.T) {
	d := time.Second
	tests := []struct {
		name   string
		p      policy
		random float64
		want   []time.Duration // after failed attempts 1, 2, 3, 4
	}{
		{"constant", policy{Backoff: "constant", InitialDelay: d}, 0, []time.Duration{d, d, d, d}},
		{"linear", policy{Backoff: "linear", InitialDelay: d}, 0, []time.Duration{d, 2 * d, 3 * d, 4 * d}},
		{"exponential doubles", policy{Backoff: "exponential", InitialDelay: d}, 0, []time.Duration{d, 2 * d, 4 * d, 8 * d}},
		{"no backoff named is exponential", policy{InitialDelay: d}, 0, []time.Duration{d, 2 * d, 4 * d, 8 * d}},
		{"capped", policy{Backoff: "linear", InitialDelay: d, MaxInterval: 2500 * time.Millisecond}, 0,
			[]time.Duration{d, 2 * d, 2500 * time.Millisecond, 2500 * time.Millisecond}},
		{"no initial delay: none", policy{Backoff: "linear", MaxInterval: time.Minute, Jitter: true}, 0.9, []time.Duration{0, 0, 0, 0}},
		{"jitter, least", policy{Backoff: "constant", InitialDelay: d, Jitter: true}, 0, []time.Duration{d / 2, d / 2, d / 2, d / 2}},
		{"jitter, most", policy{Backoff: "linear", InitialDelay: d, Jitter: true}, 0.99, []time.Duration{1490 * time.Millisecond,
			2980 * time.Millisecond, 4470 * time.Millisecond, 5960 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				if got := tc.p.delay(i+1, func() float64 { return tc.random }); got != want {
					t.Errorf("after attempt %d: %v, want %v", i+1, got, want)
				}
			}
		})
	}
}
