// Package pubsub is the Google Cloud Pub/Sub kind of transport: its
// configuration, what the actor's sidecar and KEDA need to reach Pub/Sub
// (a service account key in a Secret, or the pods' and KEDA's own
// identity), and the client that manages the actors' topics and
// subscriptions.
package pubsub

import (
	"errors"
	"fmt"

	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

// Type is the configuration's "type" of a Pub/Sub transport.
const Type = "pubsub"

// Defaults of the service configuration (docs/design.md#service-configuration):
// upstream's composition-pubsub.yaml, and Pub/Sub's limits.
const (
	DefaultAckDeadlineSeconds      = 300
	DefaultMessageRetentionSeconds = 7 * 24 * 3600
	minAckDeadlineSeconds          = 10
	maxAckDeadlineSeconds          = 600
	minMessageRetentionSeconds     = 600
	maxMessageRetentionSeconds     = 7 * 24 * 3600
)

// Settings is a Pub/Sub transport's "config".
type Settings struct {
	// ProjectID is the Google Cloud project of the topics and
	// subscriptions.
	ProjectID string `json:"projectId"`
	// Endpoint is an emulator's host:port: the service and the sidecars
	// then connect without TLS and without credentials, as the sidecar
	// does with ASYA_PUBSUB_ENDPOINT.
	Endpoint string `json:"endpoint,omitempty"`
	// Credentials name the Secret key holding a service account key (JSON)
	// for sidecars and KEDA; without it both use their own identity
	// (Workload Identity).
	Credentials *Credentials `json:"credentials,omitempty"`
	// AckDeadlineSeconds is each subscription's ack deadline.
	AckDeadlineSeconds int32 `json:"ackDeadlineSeconds,omitempty"`
	// MessageRetentionSeconds is how long a subscription keeps an
	// unacknowledged message.
	MessageRetentionSeconds int32 `json:"messageRetentionSeconds,omitempty"`
	transport.Queues        `json:"queues"`
}

// Credentials name the Secret key that holds a service account key.
type Credentials struct {
	SecretRef *transport.SecretKeyRef `json:"secretRef"`
}

var (
	_ transport.Kind         = (*Settings)(nil)
	_ transport.SidecarFiles = (*Settings)(nil)
	_ transport.ScopedOnly   = (*Settings)(nil)
)

// Type implements transport.Kind.
func (*Settings) Type() string { return Type }

// Check implements transport.Kind.
func (s *Settings) Check() error {
	if s.AckDeadlineSeconds == 0 {
		s.AckDeadlineSeconds = DefaultAckDeadlineSeconds
	}
	if s.MessageRetentionSeconds == 0 {
		s.MessageRetentionSeconds = DefaultMessageRetentionSeconds
	}
	switch {
	case s.ProjectID == "":
		return errors.New("projectId: required")
	case s.AckDeadlineSeconds < minAckDeadlineSeconds || s.AckDeadlineSeconds > maxAckDeadlineSeconds:
		return fmt.Errorf("ackDeadlineSeconds: %d is outside %d..%d seconds", s.AckDeadlineSeconds, minAckDeadlineSeconds, maxAckDeadlineSeconds)
	case s.MessageRetentionSeconds < minMessageRetentionSeconds || s.MessageRetentionSeconds > maxMessageRetentionSeconds:
		return fmt.Errorf("messageRetentionSeconds: %d is outside %d..%d seconds", s.MessageRetentionSeconds, minMessageRetentionSeconds, maxMessageRetentionSeconds)
	}
	if c := s.Credentials; c != nil {
		if c.SecretRef == nil {
			return errors.New("credentials: needs secretRef")
		}
		if err := c.SecretRef.Check("credentials.secretRef"); err != nil {
			return err
		}
	}
	if err := s.Queues.Check(); err != nil {
		return err
	}
	if s.Queues.DLQ.Enabled {
		// The sidecar sends what fails to the sump; a dead-letter topic
		// would need Pub/Sub's service agent granted on it, and at least
		// five deliveries, which neither sidecar line counts.
		return errors.New("queues.dlq.enabled: a Pub/Sub transport has no dead-letter topics: failed messages go to the sump")
	}
	return nil
}

// SecretRefs implements transport.Kind: the service account key's, if any.
func (s *Settings) SecretRefs() []transport.SecretKeyRef {
	if s.Credentials == nil {
		return nil
	}
	return []transport.SecretKeyRef{*s.Credentials.SecretRef}
}

// PodRole implements transport.Kind: Pub/Sub has no IRSA; Workload
// Identity binds the pods' own ServiceAccount.
func (s *Settings) PodRole() string { return "" }

// ScopedOnly implements transport.ScopedOnly: the Asya 0.3 sidecar has no
// Pub/Sub transport.
func (s *Settings) ScopedOnly() string {
	return "the Asya 0.3 sidecar has no Pub/Sub transport"
}

// Open implements brokers.Kind.
func (s *Settings) Open(name string, opts brokers.Options) (transport.Broker, error) {
	return New(name, *s), nil
}

// TopicPath is the topic's resource name.
func (s *Settings) TopicPath(name string) string {
	return "projects/" + s.ProjectID + "/topics/" + name
}

// SubscriptionPath is the subscription's resource name.
func (s *Settings) SubscriptionPath(name string) string {
	return "projects/" + s.ProjectID + "/subscriptions/" + name
}
