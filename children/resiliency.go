package children

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Retries (docs/design.md#retries). spec.resiliency comes in one of two
// forms, 0.5's retry and nonRetryableErrors or 1.x's policies and rules,
// and is read by one of two sidecar lines, each of which ignores the
// other's variables: the 0.5 sidecar reads ASYA_RESILIENCY_RETRY_* and
// ASYA_RESILIENCY_NON_RETRYABLE_ERRORS, the 1.x one ASYA_RESILIENCY_POLICIES
// and ASYA_RESILIENCY_RULES. An image reference does not say which line
// it is, so every sidecar gets both: the form as written, and the other
// form translated (retryToPolicies, policiesToRetry).

// resiliencyEnv is the sidecar's resiliency variables. The actor timeout
// is always said, so that the sidecar and the queue (SQS visibility)
// agree on it.
func resiliencyEnv(in Input) []corev1.EnvVar {
	spec := in.Actor.Spec
	env := []corev1.EnvVar{value("ASYA_RESILIENCY_ACTOR_TIMEOUT", seconds(spec.Timeout.Processing))}
	r := spec.Resiliency
	if r == nil {
		return env
	}
	old, cur := *r, *r
	if len(r.Policies) > 0 || len(r.Rules) > 0 {
		old = policiesToRetry(*r)
	} else {
		cur = retryToPolicies(*r)
	}
	return append(append(env, retryEnv(old)...), policiesEnv(cur)...)
}

// retryEnv is the 0.5 form in the 0.5 sidecar's variables, each only
// when set: that sidecar retries once any of them is.
func retryEnv(r v1alpha1.Resiliency) []corev1.EnvVar {
	var env []corev1.EnvVar
	add := func(name, v string) {
		if v != "" {
			env = append(env, value(name, v))
		}
	}
	if rt := r.Retry; rt != nil {
		add("ASYA_RESILIENCY_RETRY_POLICY", rt.Policy)
		if rt.MaxAttempts != nil {
			add("ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS", strconv.Itoa(int(*rt.MaxAttempts)))
		}
		add("ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL", rt.InitialInterval)
		add("ASYA_RESILIENCY_RETRY_MAX_INTERVAL", rt.MaxInterval)
		add("ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT", rt.BackoffCoefficient.String())
		if rt.Jitter != nil {
			add("ASYA_RESILIENCY_RETRY_JITTER", strconv.FormatBool(*rt.Jitter))
		}
	}
	add("ASYA_RESILIENCY_NON_RETRYABLE_ERRORS", strings.Join(r.NonRetryableErrors, ","))
	return env
}

// policiesEnv is the 1.x form in the 1.x sidecar's variables.
func policiesEnv(r v1alpha1.Resiliency) []corev1.EnvVar {
	var env []corev1.EnvVar
	if len(r.Policies) > 0 {
		env = append(env, value("ASYA_RESILIENCY_POLICIES", canonicalJSON(r.Policies)))
	}
	if len(r.Rules) > 0 {
		b, _ := json.Marshal(r.Rules)
		env = append(env, value("ASYA_RESILIENCY_RULES", string(b)))
	}
	return env
}

// The 0.5 sidecar's values for what is not set once one retry variable
// is (loadResiliencyConfig at upstream a7cec2a).
var retryDefaults = v1alpha1.Retry{Policy: "exponential", MaxAttempts: ptr.To[int32](3), InitialInterval: "1s",
	MaxInterval: "300s", BackoffCoefficient: "2", Jitter: ptr.To(true)}

// noRetry is the policy the translated rules send 0.5's non-retryable
// errors to: one attempt, which 1.x counts as exhausted at once.
const noRetry = "non-retryable"

// retryToPolicies is the 0.5 form as the 1.x sidecar reads it: what the
// 0.5 sidecar does with the variables retryEnv writes, as the policy
// "default", and nonRetryableErrors as a rule to a policy of one attempt.
// None when the 0.5 sidecar would not retry (no variable written). 1.x
// doubles the delay of an exponential backoff: a coefficient of 1 is a
// constant backoff there, any other is 2.
func retryToPolicies(r v1alpha1.Resiliency) v1alpha1.Resiliency {
	if len(retryEnv(r)) == 0 {
		return v1alpha1.Resiliency{}
	}
	rt := withRetryDefaults(r.Retry)
	backoff := "exponential"
	if c, _ := rt.BackoffCoefficient.Float64(); rt.Policy == "constant" || c == 1 {
		backoff = "constant"
	}
	policies := map[string]v1alpha1.ResiliencyPolicy{"default": {
		MaxAttempts: ptr.To(max(*rt.MaxAttempts, 1)), Backoff: backoff,
		InitialDelay: rt.InitialInterval, MaxInterval: rt.MaxInterval, Jitter: *rt.Jitter}}
	out := v1alpha1.Resiliency{}
	// The 0.5 sidecar trims each name and skips empty ones.
	var errs []string
	for _, e := range r.NonRetryableErrors {
		if e = strings.TrimSpace(e); e != "" {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		policies[noRetry] = v1alpha1.ResiliencyPolicy{MaxAttempts: ptr.To[int32](1)}
		out.Rules = []v1alpha1.ResiliencyRule{{Errors: errs, Policy: noRetry}}
	}
	out.Policies = make(map[string]json.RawMessage, len(policies))
	for name, p := range policies {
		out.Policies[name], _ = json.Marshal(p)
	}
	return out
}

// withRetryDefaults is rt with the 0.5 sidecar's value for every field
// not set.
func withRetryDefaults(rt *v1alpha1.Retry) v1alpha1.Retry {
	out := retryDefaults
	if rt == nil {
		return out
	}
	if rt.Policy != "" {
		out.Policy = rt.Policy
	}
	if rt.MaxAttempts != nil {
		out.MaxAttempts = rt.MaxAttempts
	}
	if rt.InitialInterval != "" {
		out.InitialInterval = rt.InitialInterval
	}
	if rt.MaxInterval != "" {
		out.MaxInterval = rt.MaxInterval
	}
	if rt.BackoffCoefficient != "" {
		out.BackoffCoefficient = rt.BackoffCoefficient
	}
	if rt.Jitter != nil {
		out.Jitter = rt.Jitter
	}
	return out
}

// policiesToRetry is the 1.x form as the 0.5 sidecar reads it, which has
// one policy and a list of errors it does not retry: the policy
// "default", every field written since the 1.x defaults are not 0.5's,
// and as non-retryable the errors of rules that send them, before any
// other rule does, to a policy that does not retry. None without a
// "default" (1.x then retries only what a rule sends to a policy, which
// 0.5 cannot say). 1.x's linear backoff becomes 0.5's doubling, the same
// for the first two retries; no initial delay retries at once (0.5 needs
// one: 1ms, which SQS rounds to none); no cap is SQS's longest delay, 15
// minutes. maxDuration, onExhausted and the other policies have no 0.5
// variable.
func policiesToRetry(r v1alpha1.Resiliency) v1alpha1.Resiliency {
	policies, err := r.DecodedPolicies()
	def, ok := policies["default"]
	if err != nil || !ok {
		return v1alpha1.Resiliency{}
	}
	rt := &v1alpha1.Retry{Policy: "exponential", MaxAttempts: ptr.To[int32](1), InitialInterval: def.InitialDelay,
		MaxInterval: def.MaxInterval, BackoffCoefficient: "2", Jitter: ptr.To(def.Jitter)}
	if def.MaxAttempts != nil {
		rt.MaxAttempts = ptr.To(max(*def.MaxAttempts, 1))
	}
	if def.Backoff == "constant" || isNoDuration(def.InitialDelay) {
		rt.Policy = "constant"
	}
	if isNoDuration(def.InitialDelay) {
		rt.InitialInterval = "1ms"
	}
	if isNoDuration(def.MaxInterval) {
		rt.MaxInterval = "15m"
	}
	return v1alpha1.Resiliency{Retry: rt, NonRetryableErrors: notRetried(r.Rules, policies)}
}

// notRetried is every error name whose first rule sends it to a policy
// that does not retry (1.x: the first matching rule wins).
func notRetried(rules []v1alpha1.ResiliencyRule, policies map[string]v1alpha1.ResiliencyPolicy) []string {
	var out []string
	seen := map[string]bool{}
	for _, rule := range rules {
		p, ok := policies[rule.Policy]
		for _, e := range rule.Errors {
			if ok && !seen[e] && !p.Retries() {
				out = append(out, e)
			}
			seen[e] = seen[e] || ok
		}
	}
	return out
}

// isNoDuration: a 1.x duration that is not set or zero.
func isNoDuration(s string) bool {
	d, err := time.ParseDuration(s)
	return s == "" || err == nil && d == 0
}

// canonicalJSON encodes v with every object's keys sorted, so that the
// variable does not change with the order the API server kept them in.
func canonicalJSON(v any) string {
	b, _ := json.Marshal(v) // raw JSON in: it re-encodes
	var generic any
	_ = json.Unmarshal(b, &generic)
	b, _ = json.Marshal(generic)
	return string(b)
}
