package sync

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
)

// TestCompositionTransport: a flat claim runs on the transport its
// composition names, and is refused when spec.transport names another.
func TestCompositionTransport(t *testing.T) {
	const transports = `
flatActors: {transport: rabbitmq}
transports:
  rabbitmq: {type: rabbitmq, config: {host: mq}}
  mq-dev: {type: rabbitmq, enabled: false, config: {host: mq-dev}}
  aws: {type: sqs, config: {region: eu-west-1, accountId: "123456789012"}}
  gcp-a: {type: pubsub, config: {projectId: a}}
  gcp-b: {type: pubsub, config: {projectId: b}}
`
	cfg, err := config.Parse([]byte(transports))
	if err != nil {
		t.Fatal(err)
	}
	const ref, sel = "spec.compositionRef.name", `spec.compositionSelector.matchLabels["asya.sh/transport"]`
	for _, tc := range []struct {
		name, spec string
		want       string   // the transport run on; "" when refused
		reason     string   // the refusal's reason
		says       []string // in the refusal's message
	}{
		{"no composition, no transport: flatActors.transport", `{}`, "rabbitmq", "", nil},
		{"no composition: spec.transport", `{"transport":"aws"}`, "aws", "", nil},
		{"composition only, by name", `{"compositionRef":{"name":"asyncactor-rabbitmq"}}`, "rabbitmq", "", nil},
		{"composition only, by type", `{"compositionRef":{"name":"asyncactor-sqs"}}`, "aws", "", nil},
		{"selector only", `{"compositionSelector":{"matchLabels":{"asya.sh/transport":"sqs"}}}`, "aws", "", nil},
		{"both agree by name", `{"transport":"rabbitmq","compositionRef":{"name":"asyncactor-rabbitmq"}}`, "rabbitmq", "", nil},
		{"both agree by type", `{"transport":"aws","compositionRef":{"name":"asyncactor-sqs"}}`, "aws", "", nil},
		{"one of several of the type", `{"transport":"gcp-b","compositionSelector":{"matchLabels":{"asya.sh/transport":"pubsub"}}}`, "gcp-b", "", nil},
		{"both differ: the XRD default against the composition", `{"transport":"sqs","compositionRef":{"name":"asyncactor-rabbitmq"}}`, "",
			"TransportConflict", []string{`spec.transport "sqs"`, ref + ` "asyncactor-rabbitmq"`, "remove spec.transport", "remove spec.compositionRef"}},
		{"both differ, both configured", `{"transport":"aws","compositionRef":{"name":"asyncactor-rabbitmq"}}`, "",
			"TransportConflict", []string{`spec.transport "aws"`, ref + ` "asyncactor-rabbitmq"`}},
		{"both differ, selector form", `{"transport":"rabbitmq","compositionSelector":{"matchLabels":{"asya.sh/transport":"sqs"}}}`, "",
			"TransportConflict", []string{`spec.transport "rabbitmq"`, sel + ` "sqs"`}},
		{"both differ, the composition's not configured", `{"transport":"aws","compositionRef":{"name":"asyncactor-kafka"}}`, "",
			"TransportConflict", []string{`spec.transport "aws"`, ref + ` "asyncactor-kafka"`}},
		{"unknown composition transport", `{"compositionRef":{"name":"asyncactor-kafka"}}`, "",
			"TransportNotFound", []string{ref, "no transport is named \"kafka\"", "transports.kafka with type: kafka"}},
		{"several of the type, none named", `{"compositionSelector":{"matchLabels":{"asya.sh/transport":"pubsub"}}}`, "",
			"TransportNotFound", []string{sel, "[gcp-a gcp-b]", "set spec.transport"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			actor := &v1alpha1.AsyncActor{}
			if err := json.Unmarshal([]byte(tc.spec), &actor.Spec); err != nil {
				t.Fatal(err)
			}
			actor.Spec.AsyaGeneration = v1alpha1.Flat
			h := &Handler{Config: cfg}
			refused := h.serviceDefaults(actor)
			if tc.reason == "" {
				if refused != nil {
					t.Fatalf("refused: %s: %s", refused.Reason, refused.Message)
				}
				if actor.Spec.Transport != tc.want {
					t.Errorf("transport %q, want %q", actor.Spec.Transport, tc.want)
				}
				return
			}
			if refused == nil {
				t.Fatalf("runs on %q, want %s", actor.Spec.Transport, tc.reason)
			}
			if refused.Reason != tc.reason {
				t.Errorf("reason %s, want %s (%s)", refused.Reason, tc.reason, refused.Message)
			}
			for _, s := range tc.says {
				if !strings.Contains(refused.Message, s) {
					t.Errorf("message %q does not say %q", refused.Message, s)
				}
			}
		})
	}
}

// TestCompositionTransportDisabled: the transport named after the
// composition's type is disabled: said so, not another of its type.
func TestCompositionTransportDisabled(t *testing.T) {
	cfg, err := config.Parse([]byte(`
transports:
  rabbitmq: {type: rabbitmq, enabled: false, config: {host: mq}}
  mq: {type: rabbitmq, config: {host: mq2}}
`))
	if err != nil {
		t.Fatal(err)
	}
	actor := &v1alpha1.AsyncActor{}
	actor.Spec.AsyaGeneration = v1alpha1.Flat
	if err := json.Unmarshal([]byte(`{"compositionRef":{"name":"asyncactor-rabbitmq"}}`), &actor.Spec); err != nil {
		t.Fatal(err)
	}
	refused := (&Handler{Config: cfg}).serviceDefaults(actor)
	if refused == nil || refused.Reason != "TransportDisabled" || !strings.Contains(refused.Message, `transport "rabbitmq" is disabled`) {
		t.Errorf("refused %+v, want TransportDisabled naming rabbitmq", refused)
	}
}

// TestCompositionIgnoredByNested: a 0.3 actor has no claim fields, and its
// spec.transport is what it runs on.
func TestCompositionIgnoredByNested(t *testing.T) {
	cfg, err := config.Parse([]byte(`transports: {mq: {type: rabbitmq, config: {host: mq}}}`))
	if err != nil {
		t.Fatal(err)
	}
	actor := &v1alpha1.AsyncActor{}
	actor.Spec.Transport = "mq"
	if refused := (&Handler{Config: cfg}).serviceDefaults(actor); refused != nil || actor.Spec.Transport != "mq" {
		t.Errorf("nested actor: transport %q, refused %+v", actor.Spec.Transport, refused)
	}
}

// TestCompositionTransportOfClaimants: the related actors that
// transport.Owner weighs get their transport from their composition as
// the parent does, so namesakes on one broker are seen as such.
func TestCompositionTransportOfClaimants(t *testing.T) {
	cfg, err := config.Parse([]byte(`
flatActors: {transport: rabbitmq}
transports:
  rabbitmq: {type: rabbitmq, config: {host: mq}}
  aws: {type: sqs, config: {region: eu-west-1, accountId: "123456789012"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	req, err := hook.DecodeSyncRequest([]byte(`{"parent": {"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
	"metadata": {"name": "b", "namespace": "n"}, "spec": {"actor": "doubler", "image": "i", "handler": "h.f",
		"compositionRef": {"name": "asyncactor-sqs"}}},
	"related": {"AsyncActor.asya.sh/v1alpha1": {
		"n/a": {"metadata": {"name": "a", "namespace": "n"}, "spec": {"actor": "doubler", "image": "i", "handler": "h.f",
			"compositionSelector": {"matchLabels": {"asya.sh/transport": "sqs"}}}},
		"n/b": {"metadata": {"name": "b", "namespace": "n"}, "spec": {"actor": "doubler", "image": "i", "handler": "h.f",
			"compositionRef": {"name": "asyncactor-sqs"}}}
	}}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Config: cfg}
	if refused := h.serviceDefaults(req.Actor); refused != nil || req.Actor.Spec.Transport != "aws" {
		t.Fatalf("parent: transport %q, refused %+v; want aws", req.Actor.Spec.Transport, refused)
	}
	for _, a := range h.claimants(req) {
		if a.Spec.Transport != "aws" {
			t.Errorf("claimant %s: transport %q, want aws, the parent's", a.Name, a.Spec.Transport)
		}
	}
}
