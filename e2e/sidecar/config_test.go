package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"
)

func TestLoadConfig(t *testing.T) {
	defaults := config{
		LogLevel: slog.LevelInfo, Actor: "a", HappyEnd: "happy-end", ErrorEnd: "error-end",
		RuntimeTimeout: 5 * time.Minute, SocketDir: "/var/run/asya", Transport: "rabbitmq",
		Rabbit: rabbitConfig{URL: "amqp://guest:guest@localhost:5672/", Exchange: "asya"},
		SQS:    sqsConfig{Region: "us-east-1", VisibilityTimeout: 600, WaitTimeSeconds: 20},
	}
	tests := []struct {
		name    string
		env     map[string]string
		change  func(*config)
		wantErr string
	}{
		{name: "defaults", env: map[string]string{"ASYA_ACTOR_NAME": "a"}},
		{
			name: "rabbitmq as asya-sync sets it",
			env: map[string]string{
				"ASYA_LOG_LEVEL": "info", "ASYA_ACTOR_NAME": "a", "ASYA_GATEWAY_URL": "http://gw:8080/",
				"ASYA_ACTOR_HAPPY_END": "happy-end", "ASYA_ACTOR_ERROR_END": "error-end",
				"ASYA_RUNTIME_TIMEOUT": "300s", "ASYA_SOCKET_DIR": "/var/run/asya", "ASYA_TRANSPORT": "rabbitmq",
				"ASYA_RABBITMQ_HOST": "rabbit", "ASYA_RABBITMQ_PORT": "5673", "ASYA_RABBITMQ_USERNAME": "u",
				"ASYA_RABBITMQ_PASSWORD": "s3cret", "ASYA_RABBITMQ_EXCHANGE": "jobs",
			},
			change: func(c *config) {
				c.GatewayURL = "http://gw:8080"
				c.Rabbit = rabbitConfig{URL: "amqp://u:s3cret@rabbit:5673/", Exchange: "jobs"}
			},
		},
		{
			name: "a vhost through ASYA_RABBITMQ_URL, which replaces host, port and credentials",
			env: map[string]string{
				"ASYA_ACTOR_NAME": "a", "ASYA_RABBITMQ_HOST": "rabbit", "ASYA_RABBITMQ_USERNAME": "u", "ASYA_RABBITMQ_PASSWORD": "s3cret",
				"ASYA_RABBITMQ_URL": "amqp://u:s3cret@rabbit:5672/asya-vh",
			},
			change: func(c *config) { c.Rabbit.URL = "amqp://u:s3cret@rabbit:5672/asya-vh" },
		},
		{
			name:    "a password the URL cannot carry, as the real sidecar builds it",
			env:     map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_RABBITMQ_PASSWORD": "50%off"},
			wantErr: "RabbitMQ URL",
		},
		{
			name: "sqs end actor",
			env: map[string]string{
				"ASYA_ACTOR_NAME": "happy-end", "ASYA_TRANSPORT": "sqs", "ASYA_IS_END_ACTOR": "true",
				"ASYA_RUNTIME_TIMEOUT": "30s", "ASYA_AWS_REGION": "eu-west-1", "ASYA_SQS_ENDPOINT": "http://sqs:9324/",
				"ASYA_SQS_VISIBILITY_TIMEOUT": "90", "ASYA_SQS_WAIT_TIME_SECONDS": "5", "ASYA_LOG_LEVEL": "DEBUG",
			},
			change: func(c *config) {
				c.Actor, c.Transport, c.IsEndActor, c.RuntimeTimeout, c.LogLevel = "happy-end", "sqs", true, 30*time.Second, slog.LevelDebug
				c.SQS = sqsConfig{Region: "eu-west-1", Endpoint: "http://sqs:9324", VisibilityTimeout: 90, WaitTimeSeconds: 5}
			},
		},
		{
			name:   "visibility defaults to twice the runtime timeout",
			env:    map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_RUNTIME_TIMEOUT": "45s"},
			change: func(c *config) { c.RuntimeTimeout, c.SQS.VisibilityTimeout = 45*time.Second, 90 },
		},
		{name: "no wait time is 20s", env: map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_SQS_WAIT_TIME_SECONDS": "0"}},
		{name: "unknown log level is info", env: map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_LOG_LEVEL": "chatty"}},
		{name: "no actor", env: map[string]string{}, wantErr: "ASYA_ACTOR_NAME is required"},
		{name: "bad transport", env: map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_TRANSPORT": "kafka"}, wantErr: `"kafka" is not rabbitmq or sqs`},
		{name: "bad timeout", env: map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_RUNTIME_TIMEOUT": "300"}, wantErr: "ASYA_RUNTIME_TIMEOUT"},
		{name: "bad port", env: map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_RABBITMQ_PORT": "0"}, wantErr: "ASYA_RABBITMQ_PORT"},
		{name: "bad wait", env: map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_SQS_WAIT_TIME_SECONDS": "21"}, wantErr: "ASYA_SQS_WAIT_TIME_SECONDS"},
		{name: "bad bool", env: map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_IS_END_ACTOR": "maybe"}, wantErr: "ASYA_IS_END_ACTOR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadConfig(func(k string) string { return tc.env[k] })
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
			if tc.change != nil {
				tc.change(&want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRabbitURLUnescaped: credentials go into the URL as they are, as the
// real sidecar puts them; a "/" in the password makes the URL name another
// host, which is why asya-sync refuses such a password.
func TestRabbitURLUnescaped(t *testing.T) {
	getenv := map[string]string{"ASYA_ACTOR_NAME": "a", "ASYA_RABBITMQ_HOST": "h", "ASYA_RABBITMQ_PASSWORD": "p@ss/word"}
	cfg, err := loadConfig(func(k string) string { return getenv[k] })
	if err != nil {
		t.Fatal(err)
	}
	if want := "amqp://guest:p@ss/word@h:5672/"; cfg.Rabbit.URL != want {
		t.Errorf("url %q, want %q", cfg.Rabbit.URL, want)
	}
	if u, _ := amqp.ParseURI(cfg.Rabbit.URL); u.Host != "ss" {
		t.Errorf("the URL's host is %q; the real sidecar's is \"ss\"", u.Host)
	}
}
