package sync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/config"
)

// gotSecrets is the API server as readSecrets sees it: the Secrets it
// holds by namespace/name, or an error, and the Secrets it was asked for.
type gotSecrets struct {
	held  map[string]map[string][]byte
	err   error
	asked []string
}

func (g *gotSecrets) GetSecret(_ context.Context, namespace, name string) (*hook.Secret, error) {
	g.asked = append(g.asked, namespace+"/"+name)
	data, ok := g.held[namespace+"/"+name]
	if g.err != nil || !ok {
		return nil, g.err
	}
	return &hook.Secret{Object: hook.Object{Metadata: hook.ObjectMeta{Name: name, Namespace: namespace}}, Data: data}, nil
}

// TestSecretsRead: with watch.secrets read the service gets the Secrets
// the transport names itself, and the status says what they show; Secrets
// Metacontroller sent, a finalize and a transport that names none get
// nothing, and a read that fails reports nothing missing.
func TestSecretsRead(t *testing.T) {
	const withSecret = "transports: {mq: {type: rabbitmq, config: {host: mq, username: asya, passwordSecretRef: {name: mq-pass, key: password}}}}"
	for _, tc := range []struct {
		name       string
		config     string
		sent       map[string]any // the Secret.v1 group Metacontroller sent, if any
		finalizing bool
		getter     *gotSecrets
		wantAsked  []string
		wantReason string // WorkloadReady's, where the Secrets are judged; "" for none of a Secret
		wantNote   string // in TransportReady's message
	}{
		{name: "present and usable", config: withSecret, getter: &gotSecrets{held: map[string]map[string][]byte{"ml/mq-pass": {"password": []byte("s3cret")}}},
			wantAsked: []string{"ml/mq-pass"}},
		{name: "missing: SecretNotFound", config: withSecret, getter: &gotSecrets{},
			wantAsked: []string{"ml/mq-pass"}, wantReason: "SecretNotFound"},
		{name: "unusable: SecretUnusable", config: withSecret, getter: &gotSecrets{held: map[string]map[string][]byte{"ml/mq-pass": {"password": []byte("p%ss")}}},
			wantAsked: []string{"ml/mq-pass"}, wantReason: "SecretUnusable"},
		{name: "read fails: nothing missing, and why", config: withSecret, getter: &gotSecrets{err: errors.New("secrets is forbidden")},
			wantAsked: []string{"ml/mq-pass"}, wantNote: "referenced Secrets not read: secrets is forbidden"},
		{name: "no API client", config: withSecret, wantNote: "referenced Secrets not read: asya-sync has no Kubernetes API client"},
		{name: "sent by Metacontroller: used, not read", config: withSecret, sent: map[string]any{}, getter: &gotSecrets{}, wantReason: "SecretNotFound"},
		{name: "finalize: not read", config: withSecret, finalizing: true, getter: &gotSecrets{}},
		{name: "no Secret named: not read", config: "transports: {mq: {type: rabbitmq, config: {host: mq}}}", getter: &gotSecrets{}},
		{name: "watch.secrets false: not read", config: "watch: {secrets: false}\n" + withSecret, getter: &gotSecrets{},
			wantNote: "referenced Secrets not checked (watch.secrets: false)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			h := &Handler{Config: cfg, Script: testScript, FlatScript: testFlatScript,
				Actors: noOtherActors{}, Now: func() time.Time { return now }}
			if tc.getter != nil {
				h.Secrets = tc.getter
			}
			resp, err := h.Answer(context.Background(), DecodeBody(t, echoBody(tc.finalizing, deployment(1, 1), "Secret.v1", tc.sent)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.getter != nil && strings.Join(tc.getter.asked, " ") != strings.Join(tc.wantAsked, " ") {
				t.Errorf("Secrets asked for %v, want %v", tc.getter.asked, tc.wantAsked)
			}
			if tc.finalizing {
				return
			}
			w := conditionIn(resp, "WorkloadReady")
			if got := w.Reason; strings.HasPrefix(got, "Secret") != (tc.wantReason != "") || tc.wantReason != "" && got != tc.wantReason {
				t.Errorf("WorkloadReady reason %q (%s), want %q", got, w.Message, tc.wantReason)
			}
			c := conditionIn(resp, "TransportReady")
			if (tc.wantNote != "") != strings.Contains(c.Message, "referenced Secrets") || !strings.Contains(c.Message, tc.wantNote) {
				t.Errorf("TransportReady message %q, want the note %q", c.Message, tc.wantNote)
			}
		})
	}
}
