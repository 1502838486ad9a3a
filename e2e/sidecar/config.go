package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// config is what the sidecar reads from its environment: the variables
// asya-sync sets on the asya-sidecar container (children/sidecar.go and
// the transports' SidecarEnv), with the real sidecar's defaults, read from
// the Asya sidecar 0.3 (deliveryhero/asya 23d62b0,
// src/asya-sidecar/internal/config/config.go).
type config struct {
	LogLevel   slog.Level
	Actor      string
	GatewayURL string
	// HappyEnd and ErrorEnd are the end actors: happy-end and error-end
	// for the 0.3 sidecar, the sink and the sump for the current one.
	HappyEnd       string
	ErrorEnd       string
	RuntimeTimeout time.Duration
	SocketDir      string
	Transport      string // rabbitmq, sqs or (current generation only) pubsub
	IsEndActor     bool
	Rabbit         rabbitConfig
	SQS            sqsConfig
	PubSub         pubsubConfig
	// Current is nil for the 0.3 sidecar, and what only the current
	// generation has otherwise (current_config.go).
	Current *currentConfig
}

type rabbitConfig struct {
	// URL is ASYA_RABBITMQ_URL, else built from _HOST, _PORT, _USERNAME
	// and _PASSWORD as the real sidecar builds it: unescaped, and always
	// with the vhost "/".
	URL string
	// Exchange is the topic exchange every message is published to,
	// ASYA_RABBITMQ_EXCHANGE, by default "asya" (never the default
	// exchange).
	Exchange string
}

// rabbitURL is the real sidecar's buildRabbitMQURL. A credential with a
// character a URL reserves ("/", "?", "#", "%" ...) yields a URL that
// names another host or fails to parse, in both sidecars alike.
func rabbitURL(str func(key, fallback string) string, port int) string {
	if u := str("ASYA_RABBITMQ_URL", ""); u != "" {
		return u
	}
	return fmt.Sprintf("amqp://%s:%s@%s:%d/", str("ASYA_RABBITMQ_USERNAME", "guest"),
		str("ASYA_RABBITMQ_PASSWORD", "guest"), str("ASYA_RABBITMQ_HOST", "localhost"), port)
}

type sqsConfig struct {
	Region, Endpoint                   string
	VisibilityTimeout, WaitTimeSeconds int32 // seconds
}

// pubsubConfig is what the current sidecar reads for Pub/Sub:
// ASYA_PUBSUB_PROJECT_ID and ASYA_PUBSUB_ENDPOINT, both without default.
type pubsubConfig struct {
	ProjectID, Endpoint string
}

// queueName is the queue of an actor on either transport, as the 0.3
// sidecar names it.
func queueName(actor string) string { return "asya-" + actor }

// queuePrefix is what comes before the actor's name in its queue's:
// "asya-" for the 0.3 sidecar, "asya-{namespace}-" for the current one.
// The generation fixes it at load; queue and routingKey follow from it.
func (c config) queuePrefix() string {
	if c.Current != nil {
		return "asya-" + c.Current.Namespace + "-"
	}
	return "asya-"
}

// queue is the queue of an actor.
func (c config) queue(actor string) string { return c.queuePrefix() + actor }

// routingKey is the key a message for the queue is published under on
// the exchange: the queue's name without the prefix, as both real
// sidecars derive it (a name without the prefix is its own key). For
// either generation that is the bare actor name.
func (c config) routingKey(queue string) string {
	if p := c.queuePrefix(); len(queue) > len(p) && strings.HasPrefix(queue, p) {
		return queue[len(p):]
	}
	return queue
}

// loadConfig reads the configuration through getenv (os.Getenv). Unlike
// the real sidecar, which falls back to a default on a value it cannot
// parse, it refuses such a value: a test should hear about it.
//
// The generation is chosen first (generationOf); the current one is read
// by loadCurrentConfig, the rest of this function is the 0.3 sidecar's.
func loadConfig(getenv func(string) string) (config, error) {
	if current, err := generationOf(getenv); err != nil {
		return config{}, err
	} else if current {
		return loadCurrentConfig(getenv)
	}
	var errs []error
	bad := func(key, v, want string) { errs = append(errs, fmt.Errorf("%s: %q is not %s", key, v, want)) }
	str := func(key, fallback string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return fallback
	}
	num := func(key string, fallback, lo, hi int) int {
		v := getenv(key)
		n, err := strconv.Atoi(v)
		if v == "" {
			return fallback
		} else if err != nil || n < lo || n > hi {
			bad(key, v, fmt.Sprintf("an integer from %d to %d", lo, hi))
			return fallback
		}
		return n
	}
	cfg := config{
		LogLevel:   logLevel(getenv("ASYA_LOG_LEVEL")),
		Actor:      getenv("ASYA_ACTOR_NAME"),
		GatewayURL: strings.TrimRight(getenv("ASYA_GATEWAY_URL"), "/"),
		HappyEnd:   str("ASYA_ACTOR_HAPPY_END", "happy-end"),
		ErrorEnd:   str("ASYA_ACTOR_ERROR_END", "error-end"),
		SocketDir:  str("ASYA_SOCKET_DIR", "/var/run/asya"),
		Transport:  str("ASYA_TRANSPORT", "rabbitmq"),
		Rabbit: rabbitConfig{
			URL:      rabbitURL(str, num("ASYA_RABBITMQ_PORT", 5672, 1, 65535)),
			Exchange: str("ASYA_RABBITMQ_EXCHANGE", "asya"),
		},
		SQS: sqsConfig{
			Region: str("ASYA_AWS_REGION", "us-east-1"), Endpoint: strings.TrimRight(getenv("ASYA_SQS_ENDPOINT"), "/"),
			VisibilityTimeout: int32(num("ASYA_SQS_VISIBILITY_TIMEOUT", 0, 0, 43200)),
			WaitTimeSeconds:   int32(num("ASYA_SQS_WAIT_TIME_SECONDS", 20, 0, 20)),
		},
	}
	timeout := str("ASYA_RUNTIME_TIMEOUT", "5m")
	if d, err := time.ParseDuration(timeout); err == nil && d > 0 {
		cfg.RuntimeTimeout = d
	} else {
		bad("ASYA_RUNTIME_TIMEOUT", timeout, "a positive duration such as 300s")
	}
	switch v := strings.ToLower(getenv("ASYA_IS_END_ACTOR")); v {
	case "true", "1", "yes", "on":
		cfg.IsEndActor = true
	case "", "false", "0", "no", "off":
	default:
		bad("ASYA_IS_END_ACTOR", v, "a boolean")
	}
	// As the real sidecar: no visibility timeout is twice the runtime's,
	// and no wait time is 20 s.
	if cfg.SQS.VisibilityTimeout == 0 {
		cfg.SQS.VisibilityTimeout = int32(min(2*cfg.RuntimeTimeout/time.Second, 43200))
	}
	if cfg.SQS.WaitTimeSeconds == 0 {
		cfg.SQS.WaitTimeSeconds = 20
	}
	if cfg.Actor == "" {
		errs = append(errs, errors.New("ASYA_ACTOR_NAME is required"))
	}
	// The real sidecar fails to dial such a URL and exits; this one says
	// why before it starts.
	if _, err := amqp.ParseURI(cfg.Rabbit.URL); cfg.Transport == "rabbitmq" && err != nil {
		errs = append(errs, fmt.Errorf("RabbitMQ URL: %w", err))
	}
	if cfg.Transport != "rabbitmq" && cfg.Transport != "sqs" {
		bad("ASYA_TRANSPORT", cfg.Transport, "rabbitmq or sqs")
	}
	return cfg, errors.Join(errs...)
}

// logLevel maps ASYA_LOG_LEVEL to a level; anything unknown is info.
func logLevel(s string) slog.Level {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error", "critical":
		return slog.LevelError
	}
	return slog.LevelInfo
}
