package pubsub

import (
	"path"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/transport"
)

// The sidecar's variables, as the sidecar at a7cec2a reads them.
const (
	projectIDEnv   = "ASYA_PUBSUB_PROJECT_ID"
	endpointEnv    = "ASYA_PUBSUB_ENDPOINT"
	credentialsEnv = "GOOGLE_APPLICATION_CREDENTIALS"
)

// CredentialsDir is where the sidecar finds the service account key: the
// Google client libraries read a key only from the file
// GOOGLE_APPLICATION_CREDENTIALS names.
const CredentialsDir = "/var/run/secrets/asya/pubsub"

// authCredentials is the KEDA gcp-pubsub scaler's parameter for a service
// account key.
const authCredentials = "GoogleApplicationCredentials"

// SidecarEnv implements transport.Kind: the project and the emulator's
// endpoint as upstream's composition writes them, and the key's file when
// a Secret holds one.
func (s *Settings) SidecarEnv(transport.Queue) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: projectIDEnv, Value: s.ProjectID}}
	if s.Endpoint != "" {
		env = append(env, corev1.EnvVar{Name: endpointEnv, Value: s.Endpoint})
	}
	if s.Credentials != nil {
		env = append(env, corev1.EnvVar{Name: credentialsEnv, Value: path.Join(CredentialsDir, s.Credentials.SecretRef.Key)})
	}
	return env
}

// SidecarFiles implements transport.SidecarFiles: the Secret's key, as a
// file in CredentialsDir.
func (s *Settings) SidecarFiles() (*corev1.VolumeSource, string) {
	if s.Credentials == nil {
		return nil, ""
	}
	ref := s.Credentials.SecretRef
	mode := int32(0o444)
	return &corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  ref.Name,
		Items:       []corev1.KeyToPath{{Key: ref.Key, Path: ref.Key}},
		DefaultMode: &mode,
	}}, CredentialsDir
}

// Trigger implements transport.Kind with KEDA's gcp-pubsub scaler, as
// upstream's composition writes it: the subscription's undelivered
// messages, which KEDA reads from Cloud Monitoring.
func (s *Settings) Trigger(q transport.Queue, target string) (string, map[string]string) {
	return "gcp-pubsub", map[string]string{
		"subscriptionName": s.SubscriptionPath(q.Name()),
		"mode":             "SubscriptionSize",
		"value":            target,
	}
}

// TriggerAuth implements transport.Kind: the service account key from its
// Secret (one key, so no two entries collapse under Metacontroller's
// apply), else KEDA's own Google identity (Workload Identity of KEDA's
// operator): the gcp-pubsub scaler needs one or the other.
func (s *Settings) TriggerAuth() *kedav1alpha1.TriggerAuthenticationSpec {
	if s.Credentials != nil {
		return &kedav1alpha1.TriggerAuthenticationSpec{
			SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{s.Credentials.SecretRef.AuthTarget(authCredentials)},
		}
	}
	return &kedav1alpha1.TriggerAuthenticationSpec{
		PodIdentity: &kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderGCP},
	}
}
