package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGenerationOf(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		current bool
		wantErr string
	}{
		{env: map[string]string{}},
		{env: map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_RUNTIME_TIMEOUT": "5m"}},
		{env: map[string]string{"ASYA_NAMESPACE": "team"}, current: true},
		{env: map[string]string{"ASYA_TEST_SIDECAR_GENERATION": "current"}, current: true},
		{env: map[string]string{"ASYA_TEST_SIDECAR_GENERATION": "0.3", "ASYA_NAMESPACE": "team"}},
		{env: map[string]string{"ASYA_TEST_SIDECAR_GENERATION": "1.x"}, wantErr: `"1.x" is not current or 0.3`},
	} {
		got, err := generationOf(func(k string) string { return tc.env[k] })
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.current {
			t.Errorf("%v: current %v (%v), want %v", tc.env, got, err, tc.current)
		}
	}
}

func TestLoadCurrentConfig(t *testing.T) {
	defaults := config{
		LogLevel: slog.LevelInfo, Actor: "a", HappyEnd: "x-sink", ErrorEnd: "x-sump",
		RuntimeTimeout: 5 * time.Minute, SocketDir: "/var/run/asya", Transport: "rabbitmq",
		Rabbit:  rabbitConfig{URL: "amqp://guest:guest@localhost:5672/", Exchange: "asya"},
		SQS:     sqsConfig{Region: "us-east-1", VisibilityTimeout: 600, WaitTimeSeconds: 20},
		Current: &currentConfig{Namespace: "ns", ReadyTimeout: 5 * time.Minute, Line: "0.5"},
	}
	base := map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_NAMESPACE": "ns"}
	tests := []struct {
		name    string
		env     map[string]string
		change  func(*config)
		wantErr string
	}{
		{name: "defaults"},
		{
			name: "rabbitmq from its parts, unescaped and on vhost /, as the real config.go builds it",
			env: map[string]string{
				"ASYA_RABBITMQ_HOST": "rabbit", "ASYA_RABBITMQ_PORT": "5673", "ASYA_RABBITMQ_USERNAME": "u",
				"ASYA_RABBITMQ_PASSWORD": "s3cret", "ASYA_RABBITMQ_EXCHANGE": "asya-ns", "ASYA_RABBITMQ_PREFETCH": "1",
			},
			change: func(c *config) { c.Rabbit = rabbitConfig{URL: "amqp://u:s3cret@rabbit:5673/", Exchange: "asya-ns"} },
		},
		{
			name:   "ASYA_RABBITMQ_URL wins over the parts",
			env:    map[string]string{"ASYA_RABBITMQ_HOST": "rabbit", "ASYA_RABBITMQ_URL": "amqp://u:p@h:5672/vh"},
			change: func(c *config) { c.Rabbit.URL = "amqp://u:p@h:5672/vh" },
		},
		{
			name: "sqs end actor with the sink and sump renamed",
			env: map[string]string{
				"ASYA_ACTOR_NAME": "x-sink", "ASYA_TRANSPORT": "sqs", "ASYA_IS_END_ACTOR": "true",
				"ASYA_ACTOR_SINK": "done", "ASYA_ACTOR_SUMP": "failed", "ASYA_RESILIENCY_ACTOR_TIMEOUT": "30s",
				"ASYA_RUNTIME_READY_TIMEOUT": "1m", "ASYA_AWS_REGION": "eu-west-1", "ASYA_SQS_ENDPOINT": "http://sqs:9324/",
				"ASYA_SQS_WAIT_TIME_SECONDS": "5", "ASYA_SOCKET_DIR": "/tmp/s", "ASYA_LOG_LEVEL": "DEBUG",
			},
			change: func(c *config) {
				c.Actor, c.Transport, c.IsEndActor, c.HappyEnd, c.ErrorEnd = "x-sink", "sqs", true, "done", "failed"
				c.RuntimeTimeout, c.Current.ReadyTimeout, c.SocketDir, c.LogLevel = 30*time.Second, time.Minute, "/tmp/s", slog.LevelDebug
				c.SQS = sqsConfig{Region: "eu-west-1", Endpoint: "http://sqs:9324", VisibilityTimeout: 60, WaitTimeSeconds: 5}
			},
		},
		{
			name:   "the 0.3 variables mean nothing here",
			env:    map[string]string{"ASYA_RUNTIME_TIMEOUT": "1s", "ASYA_ACTOR_HAPPY_END": "happy-end", "ASYA_ACTOR_ERROR_END": "error-end"},
			change: func(c *config) {},
		},
		{
			name:   "chosen by the image's variable",
			env:    map[string]string{"ASYA_TEST_SIDECAR_GENERATION": "current"},
			change: func(c *config) {},
		},
		{name: "no wait time is 20s", env: map[string]string{"ASYA_SQS_WAIT_TIME_SECONDS": "0"}},
		{name: "no namespace", env: map[string]string{"ASYA_TEST_SIDECAR_GENERATION": "current", "ASYA_NAMESPACE": ""},
			wantErr: "ASYA_NAMESPACE is required"},
		{name: "no actor", env: map[string]string{"ASYA_ACTOR_NAME": ""}, wantErr: "ASYA_ACTOR_NAME is required"},
		{
			name: "pubsub on an emulator, as asya-sync renders it",
			env: map[string]string{"ASYA_TRANSPORT": "pubsub", "ASYA_PUBSUB_PROJECT_ID": "acme",
				"ASYA_PUBSUB_ENDPOINT": "pubsub:8085"},
			change: func(c *config) {
				c.Transport, c.PubSub = "pubsub", pubsubConfig{ProjectID: "acme", Endpoint: "pubsub:8085"}
			},
		},
		{name: "pubsub without a project", env: map[string]string{"ASYA_TRANSPORT": "pubsub"}, wantErr: "projectID string is empty"},
		{name: "socket", env: map[string]string{"ASYA_TRANSPORT": "socket"}, wantErr: "ASYA_TRANSPORT"},
		{
			name: "retries with the real defaults",
			env:  map[string]string{"ASYA_RESILIENCY_NON_RETRYABLE_ERRORS": " KeyError, ,mod.Failure"},
			change: func(c *config) {
				c.Current.Retry = &retryPolicy{Policy: "exponential", MaxAttempts: 3, InitialInterval: time.Second,
					MaxInterval: 300 * time.Second, Coefficient: 2, Jitter: true, NonRetryable: []string{"KeyError", "mod.Failure"}}
			},
		},
		{
			name: "retries as asya-sync renders them",
			env: map[string]string{
				"ASYA_RESILIENCY_RETRY_POLICY": "constant", "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "5",
				"ASYA_RESILIENCY_RETRY_INITIAL_INTERVAL": "2s", "ASYA_RESILIENCY_RETRY_MAX_INTERVAL": "1m",
				"ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT": "1.5", "ASYA_RESILIENCY_RETRY_JITTER": "false",
			},
			change: func(c *config) {
				c.Current.Retry = &retryPolicy{Policy: "constant", MaxAttempts: 5, InitialInterval: 2 * time.Second,
					MaxInterval: time.Minute, Coefficient: 1.5}
			},
		},
		{name: "the 0.5 line is the default, and reads no 1.x variable", env: map[string]string{"ASYA_TEST_SIDECAR_LINE": "0.5",
			"ASYA_RESILIENCY_RULES": "[nonsense"}},
		{name: "the 1.x line reads no 0.5 variable", env: map[string]string{"ASYA_TEST_SIDECAR_LINE": "1.x",
			"ASYA_RESILIENCY_RETRY_POLICY": "nonsense"}, change: func(c *config) { c.Current.Line = "1.x" }},
		{
			name: "1.x policies and rules",
			env: map[string]string{
				"ASYA_TEST_SIDECAR_LINE":   "1.x",
				"ASYA_RESILIENCY_POLICIES": `{"default":{"maxAttempts":3,"backoff":"linear","initialDelay":"500ms","maxInterval":"5s","maxDuration":"1m","jitter":true,"onExhausted":["fix"],"later":1},"hard-fail":{"maxAttempts":1}}`,
				"ASYA_RESILIENCY_RULES":    `[{"errors":["ValueError","mod.Bad"],"policy":"hard-fail"}]`,
			},
			change: func(c *config) {
				c.Current.Line = "1.x"
				c.Current.Policies = &policySet{
					Policies: map[string]policy{
						"default": {MaxAttempts: 3, Backoff: "linear", InitialDelay: 500 * time.Millisecond, MaxInterval: 5 * time.Second,
							MaxDuration: time.Minute, Jitter: true, OnExhausted: []string{"fix"}},
						"hard-fail": {MaxAttempts: 1},
					},
					Rules: []policyRule{{Errors: []string{"ValueError", "mod.Bad"}, Policy: "hard-fail"}},
				}
			},
		},
		{name: "1.x rules alone", env: map[string]string{"ASYA_TEST_SIDECAR_LINE": "1.x", "ASYA_RESILIENCY_RULES": `[{"errors":["E"],"policy":"p"}]`},
			change: func(c *config) {
				c.Current.Line = "1.x"
				c.Current.Policies = &policySet{Policies: map[string]policy{}, Rules: []policyRule{{Errors: []string{"E"}, Policy: "p"}}}
			}},
		{name: "1.x policies that are not JSON", env: map[string]string{"ASYA_TEST_SIDECAR_LINE": "1.x", "ASYA_RESILIENCY_POLICIES": "{nonsense"},
			wantErr: "ASYA_RESILIENCY_POLICIES"},
		{name: "1.x rules that are not JSON", env: map[string]string{"ASYA_TEST_SIDECAR_LINE": "1.x", "ASYA_RESILIENCY_RULES": `{"errors":[]}`},
			wantErr: "ASYA_RESILIENCY_RULES"},
		{name: "1.x duration", env: map[string]string{"ASYA_TEST_SIDECAR_LINE": "1.x", "ASYA_RESILIENCY_POLICIES": `{"default":{"initialDelay":"soon"}}`},
			wantErr: "default initialDelay"},
		{name: "1.x backoff", env: map[string]string{"ASYA_TEST_SIDECAR_LINE": "1.x", "ASYA_RESILIENCY_POLICIES": `{"default":{"backoff":"fibonacci"}}`},
			wantErr: "default backoff"},
		{name: "no such line", env: map[string]string{"ASYA_TEST_SIDECAR_LINE": "2"}, wantErr: "ASYA_TEST_SIDECAR_LINE"},
		{name: "bad retry policy", env: map[string]string{"ASYA_RESILIENCY_RETRY_POLICY": "linear"}, wantErr: "constant or exponential"},
		{name: "bad coefficient", env: map[string]string{"ASYA_RESILIENCY_RETRY_BACKOFF_COEFFICIENT": "0.5"}, wantErr: "at least 1.0"},
		{name: "bad attempts", env: map[string]string{"ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS": "-1"}, wantErr: "ASYA_RESILIENCY_RETRY_MAX_ATTEMPTS"},
		{name: "prefetch", env: map[string]string{"ASYA_RABBITMQ_PREFETCH": "10"}, wantErr: "ASYA_RABBITMQ_PREFETCH"},
		{name: "bad timeout", env: map[string]string{"ASYA_RESILIENCY_ACTOR_TIMEOUT": "300"}, wantErr: "ASYA_RESILIENCY_ACTOR_TIMEOUT"},
		{name: "bad ready timeout", env: map[string]string{"ASYA_RUNTIME_READY_TIMEOUT": "soon"}, wantErr: "ASYA_RUNTIME_READY_TIMEOUT"},
		{name: "bad bool", env: map[string]string{"ASYA_IS_END_ACTOR": "maybe"}, wantErr: "ASYA_IS_END_ACTOR"},
		{name: "bad URL", env: map[string]string{"ASYA_RABBITMQ_PASSWORD": "50%off"}, wantErr: "RabbitMQ URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			got, err := loadConfig(func(k string) string { return env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			cur := *defaults.Current
			want.Current = &cur
			if tc.change != nil {
				tc.change(&want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQueueNames(t *testing.T) {
	old := config{}
	cur := config{Current: &currentConfig{Namespace: "team-a"}}
	for _, tc := range []struct {
		cfg          config
		actor, queue string
	}{
		{old, "echo", "asya-echo"},
		{old, "x-sink", "asya-x-sink"},
		{cur, "echo", "asya-team-a-echo"},
		{cur, "x-sump", "asya-team-a-x-sump"},
	} {
		if q := tc.cfg.queue(tc.actor); q != tc.queue {
			t.Errorf("%s queue(%q) = %q, want %q", tc.cfg.generation(), tc.actor, q, tc.queue)
		}
		if k := tc.cfg.routingKey(tc.queue); k != tc.actor {
			t.Errorf("%s routingKey(%q) = %q, want %q", tc.cfg.generation(), tc.queue, k, tc.actor)
		}
	}
	// A name without the prefix is its own key, as the real sidecar has it.
	if k := cur.routingKey("asya-other-echo"); k != "asya-other-echo" {
		t.Errorf("routingKey of another namespace's queue = %q", k)
	}
	if queueName("echo") != old.queue("echo") {
		t.Error("queueName and the 0.3 config disagree")
	}
}
