package pubsub

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/transport"
)

func TestCheck(t *testing.T) {
	on, off := true, false
	key := &transport.SecretKeyRef{Name: "gcp", Key: "credentials.json"}
	tests := []struct {
		name    string
		s       Settings
		wantErr string
	}{
		{"upstream's defaults", Settings{ProjectID: "p"}, ""},
		{"no project", Settings{}, "projectId: required"},
		{"ack deadline too short", Settings{ProjectID: "p", AckDeadlineSeconds: 5}, "ackDeadlineSeconds: 5 is outside 10..600"},
		{"ack deadline too long", Settings{ProjectID: "p", AckDeadlineSeconds: 601}, "ackDeadlineSeconds: 601"},
		{"retention too long", Settings{ProjectID: "p", MessageRetentionSeconds: 8 * 24 * 3600}, "messageRetentionSeconds: 691200 is outside 600..604800"},
		{"credentials", Settings{ProjectID: "p", Credentials: &Credentials{SecretRef: key}}, ""},
		{"credentials without a ref", Settings{ProjectID: "p", Credentials: &Credentials{}}, "credentials: needs secretRef"},
		{"ref by half", Settings{ProjectID: "p", Credentials: &Credentials{SecretRef: &transport.SecretKeyRef{Name: "gcp"}}}, "credentials.secretRef: needs both"},
		{"dead-letter topics", Settings{ProjectID: "p", Queues: transport.Queues{DLQ: transport.DLQ{Enabled: true}}}, "queues.dlq.enabled: a Pub/Sub transport has no dead-letter topics"},
		{"manage off, autoCreate on", Settings{ProjectID: "p", Queues: transport.Queues{Manage: &off, AutoCreate: &on}}, "queues.autoCreate: true contradicts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Check()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("Check = %v, want %q", err, tt.wantErr)
			case err == nil && (tt.s.AckDeadlineSeconds != 300 || tt.s.MessageRetentionSeconds != 604800):
				t.Errorf("defaults: ack deadline %d, retention %d; want upstream's 300 and 604800", tt.s.AckDeadlineSeconds, tt.s.MessageRetentionSeconds)
			}
		})
	}
}

// The sidecar reads ASYA_PUBSUB_PROJECT_ID and ASYA_PUBSUB_ENDPOINT (the
// sidecar at a7cec2a), and a service account key only as the file
// GOOGLE_APPLICATION_CREDENTIALS names; KEDA's gcp-pubsub scaler takes the
// key itself, or KEDA's own identity.
func TestWhatTheSidecarAndKEDAGet(t *testing.T) {
	key := &transport.SecretKeyRef{Name: "gcp", Key: "sa.json"}
	q := transport.Queue{Namespace: "team-a", Actor: "doubler", Scoped: true}
	tests := []struct {
		name      string
		s         Settings
		wantEnv   []corev1.EnvVar
		wantFiles bool
		wantAuth  *kedav1alpha1.TriggerAuthenticationSpec
	}{
		{"workload identity", Settings{ProjectID: "p"},
			[]corev1.EnvVar{{Name: "ASYA_PUBSUB_PROJECT_ID", Value: "p"}}, false,
			&kedav1alpha1.TriggerAuthenticationSpec{PodIdentity: &kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderGCP}}},
		{"emulator", Settings{ProjectID: "p", Endpoint: "pubsub:8085"},
			[]corev1.EnvVar{{Name: "ASYA_PUBSUB_PROJECT_ID", Value: "p"}, {Name: "ASYA_PUBSUB_ENDPOINT", Value: "pubsub:8085"}}, false,
			&kedav1alpha1.TriggerAuthenticationSpec{PodIdentity: &kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderGCP}}},
		{"service account key", Settings{ProjectID: "p", Credentials: &Credentials{SecretRef: key}},
			[]corev1.EnvVar{{Name: "ASYA_PUBSUB_PROJECT_ID", Value: "p"}, {Name: "GOOGLE_APPLICATION_CREDENTIALS", Value: "/var/run/secrets/asya/pubsub/sa.json"}}, true,
			&kedav1alpha1.TriggerAuthenticationSpec{SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{{Parameter: "GoogleApplicationCredentials", Name: "gcp", Key: "sa.json"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantEnv, tt.s.SidecarEnv(q)); diff != "" {
				t.Errorf("SidecarEnv (-want +got):\n%s", diff)
			}
			source, dir := tt.s.SidecarFiles()
			if (source != nil) != tt.wantFiles {
				t.Fatalf("SidecarFiles = %v, want files: %v", source, tt.wantFiles)
			}
			if source != nil && (source.Secret.SecretName != "gcp" || source.Secret.Items[0].Key != "sa.json" || dir+"/"+source.Secret.Items[0].Path != tt.wantEnv[1].Value) {
				t.Errorf("SidecarFiles = %+v at %s: want Secret gcp's key sa.json at the file the env names", source.Secret, dir)
			}
			if diff := cmp.Diff(tt.wantAuth, tt.s.TriggerAuth()); diff != "" {
				t.Errorf("TriggerAuth (-want +got):\n%s", diff)
			}
			scaler, meta := tt.s.Trigger(q, "5")
			wantMeta := map[string]string{"subscriptionName": "projects/p/subscriptions/asya-team-a-doubler", "mode": "SubscriptionSize", "value": "5"}
			if scaler != "gcp-pubsub" || !cmp.Equal(meta, wantMeta) {
				t.Errorf("Trigger = %s %v, want gcp-pubsub %v (upstream's)", scaler, meta, wantMeta)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	tests := []struct {
		claim   string
		want    map[string]string
		wantErr bool
	}{
		{"team-a/doubler", map[string]string{LabelOwner: "doubler", LabelOwnerNamespace: "team-a"}, false},
		{"echo", map[string]string{LabelOwner: "echo"}, false},
		{"v1.2.echo", map[string]string{LabelOwner: "v1_2_echo"}, false},
		{"team-a/" + strings.Repeat("a", 63), map[string]string{LabelOwner: strings.Repeat("a", 63), LabelOwnerNamespace: "team-a"}, false},
		{"team-a/" + strings.Repeat("a", 64), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.claim, func(t *testing.T) {
			got, err := recordOf(tt.claim)
			if (err != nil) != tt.wantErr {
				t.Fatalf("recordOf: %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("recordOf (-want +got):\n%s", diff)
			}
			if back := claimIn(withRecord(map[string]string{"team": "ml", LabelOwnerNamespace: "stale"}, got)); back != tt.claim {
				t.Errorf("claimIn = %q, want %q back", back, tt.claim)
			}
		})
	}
	if got := claimIn(map[string]string{"team": "ml"}); got != "" {
		t.Errorf("claimIn of no record = %q, want none", got)
	}
}
