package main

import (
	"math"
	"slices"
	"strings"
	"time"
)

// What the current sidecar does with a handler's error: retry it, or end
// it, in one of two lines (docs/design.md#retries), each read from its own
// source:
//
//   - 0.5, upstream a7cec2a: internal/config/config.go
//     (loadResiliencyConfig) and internal/router/router.go
//     (handleErrorResponse, isNonRetryableError, computeRetryDelay);
//   - 1.x, deliveryhero/asya's src/asya-sidecar/internal/router/router.go
//     of the 1.x era (handleErrorResponse, matchPolicy, applyPolicy,
//     computeRetryDelayForPolicy, isDurationExhausted) and its
//     resiliency documentation (the feature page and the internal one).
//
// Each line's decide is a pure function of the policy, the message's
// attempt and the error; the router does what the verdict says.

// verdict is what becomes of one handler error.
type verdict struct {
	retry bool
	delay time.Duration // before the retry
	// reason is the ended message's status.reason; onExhausted, when
	// set, are the actors a spent 1.x message goes to instead of the sink.
	reason      string
	onExhausted []string
	// maxAttempts is the status.max_attempts the retry or the end carries.
	maxAttempts int
}

// retryPolicy is the 0.5 sidecar's ASYA_RESILIENCY_RETRY_* and
// ASYA_RESILIENCY_NON_RETRYABLE_ERRORS, with its defaults.
type retryPolicy struct {
	Policy                       string // constant or exponential
	MaxAttempts                  int
	InitialInterval, MaxInterval time.Duration
	Coefficient                  float64
	Jitter                       bool
	NonRetryable                 []string // error types, matched against the type and its mro
}

// decide05 is the 0.5 sidecar's handleErrorResponse: without a policy,
// or with at most one attempt, the error ends at once; an error whose
// type or mro is listed, and one on the last attempt, end too; any other
// is retried. p may be nil (no retry variable set).
func decide05(p *retryPolicy, attempt int, d errorDetails, random func() float64) verdict {
	switch {
	case p == nil:
		return verdict{reason: "RuntimeError", maxAttempts: 1}
	case p.MaxAttempts <= 1:
		return verdict{reason: "RuntimeError", maxAttempts: p.MaxAttempts}
	case p.nonRetryable(d.Type, d.MRO):
		return verdict{reason: "NonRetryableFailure", maxAttempts: p.MaxAttempts}
	case attempt >= p.MaxAttempts:
		return verdict{reason: "MaxRetriesExhausted", maxAttempts: p.MaxAttempts}
	}
	return verdict{retry: true, delay: p.delay(attempt, random), maxAttempts: p.MaxAttempts}
}

// delay is how long the message waits before its next attempt after
// the failed one (computeRetryDelay): the initial interval, times the
// coefficient to the failed attempt's number less one when exponential,
// at most the maximum, then times a factor from 0.5 to 1.5 with jitter
// (random gives a number from 0 to 1).
func (p retryPolicy) delay(failed int, random func() float64) time.Duration {
	d := p.InitialInterval
	if p.Policy == "exponential" {
		d = time.Duration(float64(p.InitialInterval) * math.Pow(p.Coefficient, float64(failed-1)))
	}
	d = min(d, p.MaxInterval)
	if p.Jitter {
		d = time.Duration(float64(d) * (0.5 + random()))
	}
	return d
}

// nonRetryable says whether the error's type or one of its ancestors is
// listed, by its exact name, as not to be retried.
func (p retryPolicy) nonRetryable(typ string, mro []string) bool {
	for _, n := range p.NonRetryable {
		if n == typ || slices.Contains(mro, n) {
			return true
		}
	}
	return false
}

// policySet is the 1.x sidecar's ASYA_RESILIENCY_POLICIES and
// ASYA_RESILIENCY_RULES.
type policySet struct {
	Policies map[string]policy
	Rules    []policyRule
}

// policy is one named 1.x policy; a zero duration is none.
type policy struct {
	MaxAttempts                            int
	Backoff                                string // constant, linear, anything else exponential
	InitialDelay, MaxInterval, MaxDuration time.Duration
	Jitter                                 bool
	OnExhausted                            []string
}

type policyRule struct {
	Errors []string
	Policy string
}

// decide1x is the 1.x sidecar's handleErrorResponse and applyPolicy:
// without policies, or with no policy for the error, it ends at once.
// Otherwise it is retried unless its attempts are spent (at least one,
// whatever maxAttempts says) or, with maxDuration, the time since first
// (the x-asya-first-attempt header; zero when it has none) is; a spent
// one goes to the policy's onExhausted, else ends. s may be nil (neither
// variable set).
func decide1x(s *policySet, attempt int, first, now time.Time, d errorDetails, random func() float64) verdict {
	p := s.match(d.Type, d.MRO)
	if p == nil {
		return verdict{reason: "RuntimeError"}
	}
	v := verdict{maxAttempts: max(p.MaxAttempts, 1)}
	spent := attempt >= v.maxAttempts || p.MaxDuration > 0 && !first.IsZero() && now.Sub(first) >= p.MaxDuration
	switch {
	case !spent:
		v.retry, v.delay = true, p.delay(attempt, random)
	case len(p.OnExhausted) > 0:
		v.reason, v.onExhausted = "PolicyRouted", p.OnExhausted
	default:
		v.reason = "PolicyExhausted"
	}
	return v
}

// match is matchPolicy: the policy of the first rule with a pattern
// matching the error's type or an ancestor (a rule naming no policy
// there is passed over), else "default", else none.
func (s *policySet) match(typ string, mro []string) *policy {
	if s == nil {
		return nil
	}
	candidates := append([]string{typ}, mro...)
	for _, r := range s.Rules {
		for _, pattern := range r.Errors {
			if p, ok := s.Policies[r.Policy]; ok && matchesError(pattern, candidates) {
				return &p
			}
		}
	}
	if p, ok := s.Policies["default"]; ok {
		return &p
	}
	return nil
}

// matchesError: a pattern with a dot is a whole name, equal to a
// candidate; one without matches a candidate's part after its last dot
// (so ValueError matches builtins.ValueError and mod.ValueError).
func matchesError(pattern string, candidates []string) bool {
	for _, c := range candidates {
		if !strings.Contains(pattern, ".") {
			c = c[strings.LastIndex(c, ".")+1:]
		}
		if c == pattern {
			return true
		}
	}
	return false
}

// delay is computeRetryDelayForPolicy for the failed attempt: none
// without an initial delay; the initial delay (constant), times the
// attempt (linear) or times 2 to the attempt less one (exponential); at
// most maxInterval when set; then times a factor from 0.5 to 1.5 with
// jitter. (1.x's docs say jitter adds up to a tenth; its router
// multiplies as 0.5's does, and this follows the router.)
func (p policy) delay(failed int, random func() float64) time.Duration {
	if p.InitialDelay <= 0 {
		return 0
	}
	var d time.Duration
	switch p.Backoff {
	case "constant":
		d = p.InitialDelay
	case "linear":
		d = p.InitialDelay * time.Duration(failed)
	default:
		d = time.Duration(float64(p.InitialDelay) * math.Pow(2, float64(failed-1)))
	}
	if p.MaxInterval > 0 {
		d = min(d, p.MaxInterval)
	}
	if p.Jitter {
		d = time.Duration(float64(d) * (0.5 + random()))
	}
	return d
}
