package main

import (
	"flag"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestUsageNamesEveryServeFlag: the usage text is all a user of
// "asya-sync help" sees of serve, so each flag serve defines is in it.
func TestUsageNamesEveryServeFlag(t *testing.T) {
	n := 0
	serveFlagSet(&serveFlags{}).VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(usage, "--"+f.Name+" ") && !strings.Contains(usage, "--"+f.Name+"]") {
			t.Errorf("the usage text does not name --%s", f.Name)
		}
	})
	if n == 0 {
		t.Fatal("serve defines no flag")
	}
}

// TestHelpExitsZero: -h asks for the flags, so printing them is success.
func TestHelpExitsZero(t *testing.T) {
	t.Setenv("ASYA_SYNC_CONFIG", "")
	for _, args := range [][]string{{"serve", "-h"}, {"serve", "--help"}, {"render", "-h"}, {"help"}} {
		var stdout, stderr strings.Builder
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Errorf("asya-sync %s: exit %d, want 0\n%s", strings.Join(args, " "), code, stderr.String())
		}
		if !strings.Contains(stdout.String()+stderr.String(), "-config") {
			t.Errorf("asya-sync %s prints no flags:\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
		}
	}
	// A wrong flag is still an error.
	if code := run([]string{"serve", "--no-such-flag"}, io.Discard, io.Discard); code != 1 {
		t.Errorf("asya-sync serve --no-such-flag: exit %d, want 1", code)
	}
}

// TestRenderWithoutConfig: without --config, render uses its built-in
// configuration (one RabbitMQ transport on 127.0.0.1) and says so in -h.
func TestRenderWithoutConfig(t *testing.T) {
	t.Setenv("ASYA_SYNC_CONFIG", "")
	var stdout, stderr strings.Builder
	if code := run([]string{"render", "-f", "../../examples/hello-actor.yaml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("asya-sync render without --config: exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"kind: Deployment", "name: ASYA_RABBITMQ_HOST\n          value: 127.0.0.1"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("render without --config lacks %q:\n%s", want, stdout.String())
		}
	}
	stderr.Reset()
	run([]string{"render", "-h"}, io.Discard, &stderr)
	if !strings.Contains(stderr.String(), `RabbitMQ transport named "rabbitmq" on 127.0.0.1`) {
		t.Errorf("render -h does not say what runs without --config:\n%s", stderr.String())
	}
	if !strings.Contains(usage, "without a configuration") {
		t.Errorf("the usage text does not say what render does without --config")
	}
}

// TestServeRefusesHTTPSWithoutAuth: HTTPS hooks that check no caller are
// refused at start unless acknowledged; plain HTTP without either stays
// the documented opt-out.
func TestServeRefusesHTTPSWithoutAuth(t *testing.T) {
	for _, env := range []string{"ASYA_SYNC_TLS_CERT_FILE", "ASYA_SYNC_TLS_KEY_FILE", "ASYA_SYNC_CLIENT_CA_FILE",
		"ASYA_SYNC_AUTH_TOKEN_FILE", "ASYA_SYNC_AUTH_TOKEN_DIR", "ASYA_SYNC_ALLOW_UNAUTHENTICATED"} {
		t.Setenv(env, "")
	}
	tls := []string{"--config", "c.yaml", "--tls-cert-file", "tls.crt", "--tls-key-file", "tls.key"}
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		refused bool
	}{
		{"https without auth", tls, "", true},
		{"https with a token", append(tls, "--auth-token-file", "token"), "", false},
		{"https with a token directory", append(tls, "--auth-token-dir", "tokens"), "", false},
		{"https with a client CA", append(tls, "--client-ca-file", "ca.crt"), "", false},
		{"https acknowledged by flag", append(tls, "--allow-unauthenticated"), "", false},
		{"https acknowledged by env", tls, "true", false},
		{"plain http without auth", []string{"--config", "c.yaml"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ASYA_SYNC_ALLOW_UNAUTHENTICATED", tc.env)
			_, err := parseServeFlags(tc.args, io.Discard)
			switch {
			case tc.refused && err == nil:
				t.Errorf("accepted")
			case tc.refused && !strings.Contains(err.Error(), "--allow-unauthenticated"):
				t.Errorf("the refusal does not say how to acknowledge it: %v", err)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// TestMaxConcurrentSyncsFromTheEnvironment: the admission's size comes
// from the flag, else from $ASYA_SYNC_MAX_CONCURRENT_SYNCS (the chart's
// extraEnv), else GOMAXPROCS; a value that is not a number is refused at
// start, naming the variable.
func TestMaxConcurrentSyncsFromTheEnvironment(t *testing.T) {
	config := []string{"--config", "c.yaml"}
	for _, tc := range []struct {
		name, env string
		args      []string
		want      int
		refused   bool
	}{
		{"neither", "", config, runtime.GOMAXPROCS(0), false},
		{"the environment", "3", config, 3, false},
		{"the flag over the environment", "3", append(config, "--max-concurrent-syncs", "1"), 1, false},
		{"no limit from the environment", "0", config, 0, false},
		{"not a number", "two", config, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ASYA_SYNC_MAX_CONCURRENT_SYNCS", tc.env)
			f, err := parseServeFlags(tc.args, io.Discard)
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), "ASYA_SYNC_MAX_CONCURRENT_SYNCS")):
				t.Errorf("want a refusal naming the variable, got %v", err)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.refused && f.maxSyncs != tc.want:
				t.Errorf("max concurrent syncs %d, want %d", f.maxSyncs, tc.want)
			}
		})
	}
}
