package children

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// TestResiliencyEnv: each form of spec.resiliency reaches the sidecar as
// written and translated for the other sidecar line, as
// docs/design.md#retries says.
func TestResiliencyEnv(t *testing.T) {
	policies := func(kv ...string) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = json.RawMessage(kv[i+1])
		}
		return out
	}
	rules := func(policy string, errs ...string) []v1alpha1.ResiliencyRule {
		return []v1alpha1.ResiliencyRule{{Errors: errs, Policy: policy}}
	}
	i32 := func(n int32) *int32 { return &n }
	yes, no := true, false
	tests := []struct {
		name string
		r    *v1alpha1.Resiliency
		want map[string]string // beside ASYA_RESILIENCY_ACTOR_TIMEOUT
	}{
		{name: "none", want: map[string]string{}},
		{name: "actor timeout alone", r: &v1alpha1.Resiliency{ActorTimeout: "30s"}, want: map[string]string{}},
		{name: "an empty retry sets nothing, and the 0.5 sidecar does not retry", r: &v1alpha1.Resiliency{Retry: &v1alpha1.Retry{}},
			want: map[string]string{}},
		{
			name: "0.5 retry: the 0.5 sidecar's defaults fill the 1.x default policy",
			r:    &v1alpha1.Resiliency{Retry: &v1alpha1.Retry{MaxAttempts: i32(5)}},
			want: map[string]string{
				"ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "5",
				"ASYA_RESILIENCY_POLICIES":           `{"default":{"backoff":"exponential","initialDelay":"1s","jitter":true,"maxAttempts":5,"maxInterval":"300s"}}`,
			},
		},
		{
			name: "0.5 retry, every field; a coefficient other than 1 doubles on 1.x",
			r: &v1alpha1.Resiliency{Retry: &v1alpha1.Retry{Policy: "exponential", MaxAttempts: i32(4), InitialInterval: "2s",
				MaxInterval: "60s", BackoffCoefficient: "1.5", Jitter: &no}},
			want: map[string]string{
				"ASYA_RESILIENCY_RETRY_POLICY": "exponential", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "4",
				"ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL": "2s", "ASYA_RESILIENCY_RETRY_MAX_INTERVAL": "60s",
				"ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT": "1.5", "ASYA_RESILIENCY_RETRY_JITTER": "false",
				"ASYA_RESILIENCY_POLICIES": `{"default":{"backoff":"exponential","initialDelay":"2s","maxAttempts":4,"maxInterval":"60s"}}`,
			},
		},
		{
			name: "0.5 coefficient 1 is a constant backoff",
			r:    &v1alpha1.Resiliency{Retry: &v1alpha1.Retry{BackoffCoefficient: "1.0", Jitter: &yes}},
			want: map[string]string{
				"ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT": "1.0", "ASYA_RESILIENCY_RETRY_JITTER": "true",
				"ASYA_RESILIENCY_POLICIES": `{"default":{"backoff":"constant","initialDelay":"1s","jitter":true,"maxAttempts":3,"maxInterval":"300s"}}`,
			},
		},
		{
			name: "0.5 attempts 0 is one attempt on both",
			r:    &v1alpha1.Resiliency{Retry: &v1alpha1.Retry{Policy: "constant", MaxAttempts: i32(0)}},
			want: map[string]string{
				"ASYA_RESILIENCY_RETRY_POLICY": "constant", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "0",
				"ASYA_RESILIENCY_POLICIES": `{"default":{"backoff":"constant","initialDelay":"1s","jitter":true,"maxAttempts":1,"maxInterval":"300s"}}`,
			},
		},
		{
			name: "0.5 non-retryable errors alone turn retries on, and become a rule to one attempt",
			r:    &v1alpha1.Resiliency{NonRetryableErrors: []string{"KeyError", " mod.Failure ", ""}},
			want: map[string]string{
				"ASYA_RESILIENCY_NON_RETRYABLE_ERRORS": "KeyError, mod.Failure ,",
				"ASYA_RESILIENCY_POLICIES": `{"default":{"backoff":"exponential","initialDelay":"1s","jitter":true,"maxAttempts":3,"maxInterval":"300s"},` +
					`"non-retryable":{"maxAttempts":1}}`,
				"ASYA_RESILIENCY_RULES": `[{"errors":["KeyError","mod.Failure"],"policy":"non-retryable"}]`,
			},
		},
		{
			name: "1.x default policy: every 0.5 variable written, the 1.x defaults not being 0.5's",
			r:    &v1alpha1.Resiliency{Policies: policies("default", `{"maxAttempts":4,"backoff":"exponential","initialDelay":"2s","maxInterval":"1m","jitter":true}`)},
			want: map[string]string{
				"ASYA_RESILIENCY_RETRY_POLICY": "exponential", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "4",
				"ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL": "2s", "ASYA_RESILIENCY_RETRY_MAX_INTERVAL": "1m",
				"ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT": "2", "ASYA_RESILIENCY_RETRY_JITTER": "true",
				"ASYA_RESILIENCY_POLICIES": `{"default":{"backoff":"exponential","initialDelay":"2s","jitter":true,"maxAttempts":4,"maxInterval":"1m"}}`,
			},
		},
		{
			name: "1.x empty default: one attempt, no delay, no cap, no jitter",
			r:    &v1alpha1.Resiliency{Policies: policies("default", `{}`)},
			want: map[string]string{
				"ASYA_RESILIENCY_RETRY_POLICY": "constant", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "1",
				"ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL": "1ms", "ASYA_RESILIENCY_RETRY_MAX_INTERVAL": "15m",
				"ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT": "2", "ASYA_RESILIENCY_RETRY_JITTER": "false",
				"ASYA_RESILIENCY_POLICIES": `{"default":{}}`,
			},
		},
		{
			name: "1.x no initial delay retries at once; maxDuration and onExhausted have no 0.5 variable",
			r: &v1alpha1.Resiliency{Policies: policies("default",
				`{"maxAttempts":3,"backoff":"linear","initialDelay":"0s","maxDuration":"1m","onExhausted":["fix"]}`)},
			want: map[string]string{
				"ASYA_RESILIENCY_RETRY_POLICY": "constant", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "3",
				"ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL": "1ms", "ASYA_RESILIENCY_RETRY_MAX_INTERVAL": "15m",
				"ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT": "2", "ASYA_RESILIENCY_RETRY_JITTER": "false",
				"ASYA_RESILIENCY_POLICIES": `{"default":{"backoff":"linear","initialDelay":"0s","maxAttempts":3,"maxDuration":"1m","onExhausted":["fix"]}}`,
			},
		},
		{
			name: "1.x rules: errors first sent to a policy of one attempt are 0.5's non-retryable ones; linear is 0.5's doubling",
			r: &v1alpha1.Resiliency{
				Policies: policies("default", `{"maxAttempts":3,"backoff":"linear","initialDelay":"1s"}`,
					"fast", `{"maxAttempts":5,"backoff":"constant","initialDelay":"100ms"}`, "hard-fail", `{"maxAttempts":1}`, "none", `{}`),
				Rules: []v1alpha1.ResiliencyRule{{Errors: []string{"TimeoutError"}, Policy: "fast"},
					{Errors: []string{"ValueError", "TimeoutError"}, Policy: "hard-fail"}, {Errors: []string{"mod.Gone", "ValueError"}, Policy: "none"}},
			},
			want: map[string]string{
				"ASYA_RESILIENCY_RETRY_POLICY": "exponential", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "3",
				"ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL": "1s", "ASYA_RESILIENCY_RETRY_MAX_INTERVAL": "15m",
				"ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT": "2", "ASYA_RESILIENCY_RETRY_JITTER": "false",
				"ASYA_RESILIENCY_NON_RETRYABLE_ERRORS": "ValueError,mod.Gone",
				"ASYA_RESILIENCY_POLICIES": `{"default":{"backoff":"linear","initialDelay":"1s","maxAttempts":3},` +
					`"fast":{"backoff":"constant","initialDelay":"100ms","maxAttempts":5},"hard-fail":{"maxAttempts":1},"none":{}}`,
				"ASYA_RESILIENCY_RULES": `[{"errors":["TimeoutError"],"policy":"fast"},{"errors":["ValueError","TimeoutError"],"policy":"hard-fail"},` +
					`{"errors":["mod.Gone","ValueError"],"policy":"none"}]`,
			},
		},
		{
			name: "1.x without a default: the 0.5 sidecar retries nothing",
			r:    &v1alpha1.Resiliency{Policies: policies("fast", `{"maxAttempts":5}`), Rules: rules("fast", "TimeoutError")},
			want: map[string]string{
				"ASYA_RESILIENCY_POLICIES": `{"fast":{"maxAttempts":5}}`,
				"ASYA_RESILIENCY_RULES":    `[{"errors":["TimeoutError"],"policy":"fast"}]`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			actor := &v1alpha1.AsyncActor{Spec: v1alpha1.AsyncActorSpec{CurrentSpec: v1alpha1.CurrentSpec{Resiliency: tc.r},
				Timeout: v1alpha1.TimeoutSpec{Processing: 90}}}
			env := resiliencyEnv(Input{Actor: actor})
			if env[0].Name != "ASYA_RESILIENCY_ACTOR_TIMEOUT" || env[0].Value != "90s" {
				t.Errorf("first %v, want the actor timeout", env[0])
			}
			got := map[string]string{}
			for _, e := range env[1:] {
				got[e.Name] = e.Value
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}
