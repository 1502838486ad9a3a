package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The current generation of the Asya sidecar (0.5 and later) is followed
// as it is at upstream commit a7cec2a (github.com/mrhillsman-enterprise-ai/asya,
// src/asya-sidecar, after 0.5.3): its internal/config/config.go for the
// variables and defaults, cmd/sidecar/main.go for the start,
// internal/runtime/client.go for the runtime's HTTP protocol,
// internal/router/router.go for what becomes of a message, and
// internal/transport/{rabbitmq,sqs,pubsub}.go for the brokers.

// generationVar names the generation explicitly. It belongs to this test
// image alone: neither real sidecar reads it.
const generationVar = "ASYA_TEST_SIDECAR_GENERATION"

// generationOf says whether to be the current sidecar (true) or the 0.3
// one. ASYA_TEST_SIDECAR_GENERATION decides when set ("current" or
// "0.3"), so that an image can be one generation whatever env a pod
// gives it. Otherwise ASYA_NAMESPACE does: the current sidecar cannot
// start without it, the 0.3 sidecar never reads it, and asya-sync never
// sets it for a 0.3 actor. A current-generation pod missing ASYA_NAMESPACE
// would pass for a 0.3 one that way; an image meant to be current sets
// the variable and then fails, as the real sidecar does, with
// "ASYA_NAMESPACE is required".
func generationOf(getenv func(string) string) (current bool, err error) {
	switch v := getenv(generationVar); v {
	case "current":
		return true, nil
	case "0.3":
		return false, nil
	case "":
		return getenv("ASYA_NAMESPACE") != "", nil
	default:
		return false, fmt.Errorf("%s: %q is not current or 0.3", generationVar, v)
	}
}

// generation names the sidecar's generation, for the log.
func (c config) generation() string {
	if c.Current != nil {
		return "current " + c.Current.Line
	}
	return "0.3"
}

// lineVar names the current generation's line, 0.5 (the default, the
// sidecar at upstream a7cec2a) or 1.x. Like generationVar it belongs to
// this test image alone; an actor's sidecar.env or the image sets it.
// The lines differ here in what they do with a handler's error alone
// (current_retry.go): which variables they retry by, and whether what
// is not retried ends in the sump (0.5) or the sink (1.x).
const lineVar = "ASYA_TEST_SIDECAR_LINE"

// currentConfig is what only the current generation has.
type currentConfig struct {
	// Namespace is ASYA_NAMESPACE, required: every queue is
	// asya-{namespace}-{actor}.
	Namespace string
	// ReadyTimeout bounds the wait for the runtime's ready file before
	// the first message, ASYA_RUNTIME_READY_TIMEOUT (5m); the real
	// sidecar exits 1 when it passes, and so does this one.
	ReadyTimeout time.Duration
	// Line is "0.5" or "1.x" (lineVar).
	Line string
	// Retry is the 0.5 line's retry policy, nil (no retries) unless one of
	// its variables is set, as in loadResiliencyConfig.
	Retry *retryPolicy
	// Policies are the 1.x line's policies and rules, nil (one attempt)
	// unless one of their variables is set.
	Policies *policySet
}

// retryVars are the 0.5 sidecar's retry settings; any of them set turns
// its retries on (loadResiliencyConfig at a7cec2a). ASYA_RESILIENCY_ACTOR_TIMEOUT
// is not one of them. The 1.x sidecar reads none of them.
var retryVars = []string{
	"ASYA_RESILIENCY_RETRY_POLICY", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS", "ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL",
	"ASYA_RESILIENCY_RETRY_MAX_INTERVAL", "ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT", "ASYA_RESILIENCY_RETRY_JITTER",
	"ASYA_RESILIENCY_NON_RETRYABLE_ERRORS",
}

// loadCurrentConfig reads the current sidecar's variables with its
// defaults. The end actors are the sink and the sump (ASYA_ACTOR_SINK,
// ASYA_ACTOR_SUMP), the per-call timeout is ASYA_RESILIENCY_ACTOR_TIMEOUT,
// the retries ASYA_RESILIENCY_RETRY_* on the 0.5 line and
// ASYA_RESILIENCY_POLICIES and _RULES on the 1.x line, each line blind
// to the other's.
//
// Departures, each refused at start rather than ignored, so that a test
// relying on one fails loudly: a prefetch other than 1 (asya-sync never
// sets ASYA_RABBITMQ_PREFETCH), and the socket transport, which asya-sync
// does not serve. As for the 0.3 sidecar, a value the
// real one would silently replace with its default is refused too. Variables read
// by the real sidecar and ignored here: the metrics ones (no /metrics is
// served), ASYA_QUEUE_RETRY_* (this one waits for a missing queue for
// ever instead of giving up after ten tries and starting over) and
// ASYA_GATEWAY_READY_TIMEOUT (see checkGateway).
func loadCurrentConfig(getenv func(string) string) (config, error) {
	r := envReader{getenv: getenv}
	cfg := config{
		LogLevel:       logLevel(getenv("ASYA_LOG_LEVEL")),
		Actor:          getenv("ASYA_ACTOR_NAME"),
		GatewayURL:     strings.TrimRight(getenv("ASYA_GATEWAY_URL"), "/"),
		HappyEnd:       r.str("ASYA_ACTOR_SINK", "x-sink"),
		ErrorEnd:       r.str("ASYA_ACTOR_SUMP", "x-sump"),
		RuntimeTimeout: r.duration("ASYA_RESILIENCY_ACTOR_TIMEOUT", 5*time.Minute),
		SocketDir:      r.str("ASYA_SOCKET_DIR", "/var/run/asya"),
		Transport:      r.str("ASYA_TRANSPORT", "rabbitmq"),
		IsEndActor:     r.boolean("ASYA_IS_END_ACTOR", false),
		Rabbit: rabbitConfig{
			URL:      rabbitURL(r.str, r.num("ASYA_RABBITMQ_PORT", 5672, 1, 65535)),
			Exchange: r.str("ASYA_RABBITMQ_EXCHANGE", "asya"),
		},
		SQS: sqsConfig{
			Region: r.str("ASYA_AWS_REGION", "us-east-1"), Endpoint: strings.TrimRight(getenv("ASYA_SQS_ENDPOINT"), "/"),
			VisibilityTimeout: int32(r.num("ASYA_SQS_VISIBILITY_TIMEOUT", 0, 0, 43200)),
			WaitTimeSeconds:   int32(r.num("ASYA_SQS_WAIT_TIME_SECONDS", 20, 0, 20)),
		},
		PubSub: pubsubConfig{ProjectID: getenv("ASYA_PUBSUB_PROJECT_ID"), Endpoint: getenv("ASYA_PUBSUB_ENDPOINT")},
		Current: &currentConfig{
			Namespace:    getenv("ASYA_NAMESPACE"),
			ReadyTimeout: r.duration("ASYA_RUNTIME_READY_TIMEOUT", 5*time.Minute),
			Line:         r.str(lineVar, "0.5"),
		},
	}
	switch cfg.Current.Line {
	case "0.5":
		cfg.Current.Retry = r.retry()
	case "1.x":
		cfg.Current.Policies = r.policies()
	default:
		r.bad(lineVar, cfg.Current.Line, "0.5 or 1.x")
	}
	// main.go at a7cec2a: no visibility timeout is twice the actor
	// timeout; NewSQSTransport: no wait time is 20 s.
	if cfg.SQS.VisibilityTimeout == 0 {
		cfg.SQS.VisibilityTimeout = int32(min(2*cfg.RuntimeTimeout/time.Second, 43200))
	}
	if cfg.SQS.WaitTimeSeconds == 0 {
		cfg.SQS.WaitTimeSeconds = 20
	}
	if cfg.Actor == "" {
		r.errs = append(r.errs, errors.New("ASYA_ACTOR_NAME is required"))
	}
	if cfg.Current.Namespace == "" {
		r.errs = append(r.errs, errors.New("ASYA_NAMESPACE is required"))
	}
	if cfg.Transport != "rabbitmq" && cfg.Transport != "sqs" && cfg.Transport != "pubsub" {
		r.bad("ASYA_TRANSPORT", cfg.Transport, "rabbitmq, sqs or pubsub (the test sidecar serves no other)")
	}
	if cfg.Transport == "pubsub" && cfg.PubSub.ProjectID == "" {
		// The real one fails to make its client: pubsub.NewClient refuses
		// an empty project.
		r.errs = append(r.errs, errors.New("failed to create Pub/Sub publisher client: pubsub: projectID string is empty"))
	}
	if _, err := amqp.ParseURI(cfg.Rabbit.URL); cfg.Transport == "rabbitmq" && err != nil {
		r.errs = append(r.errs, fmt.Errorf("RabbitMQ URL: %w", err))
	}
	if v := getenv("ASYA_RABBITMQ_PREFETCH"); v != "" && v != "1" {
		r.bad("ASYA_RABBITMQ_PREFETCH", v, "1 (the test sidecar takes one message at a time)")
	}
	return cfg, errors.Join(r.errs...)
}

// retry reads the retry policy, or nil when none of its variables is
// set. Like the real sidecar it refuses a policy other than constant or
// exponential, a negative number of attempts, intervals that are not
// positive and a coefficient under 1.
func (r *envReader) retry() *retryPolicy {
	if !slices.ContainsFunc(retryVars, func(k string) bool { return r.getenv(k) != "" }) {
		return nil
	}
	p := &retryPolicy{
		Policy:          r.str("ASYA_RESILIENCY_RETRY_POLICY", "exponential"),
		MaxAttempts:     r.num("ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS", 3, 0, math.MaxInt32),
		InitialInterval: r.duration("ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL", time.Second),
		MaxInterval:     r.duration("ASYA_RESILIENCY_RETRY_MAX_INTERVAL", 300*time.Second),
		Coefficient:     2.0,
		Jitter:          r.boolean("ASYA_RESILIENCY_RETRY_JITTER", true),
	}
	if p.Policy != "constant" && p.Policy != "exponential" {
		r.bad("ASYA_RESILIENCY_RETRY_POLICY", p.Policy, "constant or exponential")
	}
	if v := r.getenv("ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 1 {
			p.Coefficient = f
		} else {
			r.bad("ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT", v, "a number of at least 1.0")
		}
	}
	for _, e := range strings.Split(r.getenv("ASYA_RESILIENCY_NON_RETRYABLE_ERRORS"), ",") {
		if e = strings.TrimSpace(e); e != "" {
			p.NonRetryable = append(p.NonRetryable, e)
		}
	}
	return p
}

// policies reads the 1.x line's JSON, or nil when neither variable is
// set. Like the real sidecar it stops at JSON it cannot decode and at a
// duration it cannot parse; departure: it refuses a backoff other than
// constant, linear and exponential too, which the real router would
// take for exponential.
func (r *envReader) policies() *policySet {
	rawPolicies, rawRules := r.getenv("ASYA_RESILIENCY_POLICIES"), r.getenv("ASYA_RESILIENCY_RULES")
	if rawPolicies == "" && rawRules == "" {
		return nil
	}
	set := &policySet{Policies: map[string]policy{}}
	var policies map[string]policyJSON
	if err := unmarshalIfSet(rawPolicies, &policies); err != nil {
		r.errs = append(r.errs, fmt.Errorf("ASYA_RESILIENCY_POLICIES: %w", err))
	}
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		set.Policies[name] = r.policy("ASYA_RESILIENCY_POLICIES "+name, policies[name])
	}
	if err := unmarshalIfSet(rawRules, &set.Rules); err != nil {
		r.errs = append(r.errs, fmt.Errorf("ASYA_RESILIENCY_RULES: %w", err))
	}
	return set
}

func unmarshalIfSet(raw string, v any) error {
	if raw == "" {
		return nil
	}
	return json.Unmarshal([]byte(raw), v)
}

// policyJSON is one policy as the variable writes it.
type policyJSON struct {
	MaxAttempts  int      `json:"maxAttempts"`
	Backoff      string   `json:"backoff"`
	InitialDelay string   `json:"initialDelay"`
	MaxInterval  string   `json:"maxInterval"`
	MaxDuration  string   `json:"maxDuration"`
	Jitter       bool     `json:"jitter"`
	OnExhausted  []string `json:"onExhausted"`
}

// policy reads one policy's durations, a missing one being none.
func (r *envReader) policy(where string, in policyJSON) policy {
	p := policy{MaxAttempts: in.MaxAttempts, Backoff: in.Backoff, Jitter: in.Jitter, OnExhausted: in.OnExhausted}
	switch in.Backoff {
	case "", "constant", "linear", "exponential":
	default:
		r.bad(where+" backoff", in.Backoff, "constant, linear or exponential")
	}
	for _, f := range []struct {
		name string
		v    string
		into *time.Duration
	}{{"initialDelay", in.InitialDelay, &p.InitialDelay}, {"maxInterval", in.MaxInterval, &p.MaxInterval}, {"maxDuration", in.MaxDuration, &p.MaxDuration}} {
		d, err := time.ParseDuration(f.v)
		if f.v != "" && err != nil {
			r.bad(where+" "+f.name, f.v, "a duration such as 500ms")
		}
		*f.into = d
	}
	return p
}

// envReader reads variables, collecting what it cannot use.
type envReader struct {
	getenv func(string) string
	errs   []error
}

func (r *envReader) bad(key, v, want string) {
	r.errs = append(r.errs, fmt.Errorf("%s: %q is not %s", key, v, want))
}

func (r *envReader) str(key, fallback string) string {
	if v := r.getenv(key); v != "" {
		return v
	}
	return fallback
}

func (r *envReader) num(key string, fallback, lo, hi int) int {
	v := r.getenv(key)
	if v == "" {
		return fallback
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.bad(key, v, fmt.Sprintf("an integer from %d to %d", lo, hi))
		return fallback
	}
	return n
}

func (r *envReader) duration(key string, fallback time.Duration) time.Duration {
	v := r.getenv(key)
	if v == "" {
		return fallback
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.bad(key, v, "a positive duration such as 300s")
		return fallback
	}
	return d
}

// boolean reads a flag as the real sidecar's getEnvBool does.
func (r *envReader) boolean(key string, fallback bool) bool {
	switch v := strings.ToLower(r.getenv(key)); v {
	case "":
		return fallback
	case "true", "1", "yes", "on":
		return true
	case "false", "0", "no", "off":
		return false
	default:
		r.bad(key, v, "a boolean")
		return fallback
	}
}
