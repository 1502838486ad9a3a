// Package sqs is the Amazon SQS kind of transport: its configuration,
// what the actor's sidecar and KEDA need to reach SQS (static credentials
// or IRSA), and the client that manages the actors' queues.
package sqs

import (
	"context"
	"errors"
	"fmt"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

// Type is the configuration's "type" of an SQS transport.
const Type = "sqs"

// Defaults of the service configuration (docs/design.md#service-configuration), and SQS's limits.
const (
	DefaultWaitTimeSeconds  = 20
	DefaultDLQRetentionDays = 14
	// MaxVisibilityTimeout is SQS's limit, in seconds.
	MaxVisibilityTimeout = 43200
	maxWaitTimeSeconds   = 20
	maxRetentionDays     = 14
)

// Settings is an SQS transport's "config".
type Settings struct {
	Region            string            `json:"region"`
	AccountID         string            `json:"accountId"`
	Endpoint          string            `json:"endpoint,omitempty"`
	ActorRoleArn      string            `json:"actorRoleArn,omitempty"`
	VisibilityTimeout int32             `json:"visibilityTimeout,omitempty"`
	WaitTimeSeconds   *int32            `json:"waitTimeSeconds,omitempty"`
	Credentials       *Credentials      `json:"credentials,omitempty"`
	Tags              map[string]string `json:"tags,omitempty"`
	transport.Queues  `json:"queues"`
}

// Credentials name the Secrets that hold static AWS credentials for
// sidecars and KEDA.
type Credentials struct {
	AccessKeyIDSecretRef     *transport.SecretKeyRef `json:"accessKeyIdSecretRef"`
	SecretAccessKeySecretRef *transport.SecretKeyRef `json:"secretAccessKeySecretRef"`
}

var _ transport.Kind = (*Settings)(nil)

// Type implements transport.Kind.
func (*Settings) Type() string { return Type }

// Check implements transport.Kind.
func (s *Settings) Check() error {
	if s.WaitTimeSeconds == nil {
		w := int32(DefaultWaitTimeSeconds)
		s.WaitTimeSeconds = &w
	}
	switch {
	case s.Region == "":
		return errors.New("region: required")
	case s.AccountID == "":
		return errors.New("accountId: required")
	case s.VisibilityTimeout < 0 || s.VisibilityTimeout > MaxVisibilityTimeout:
		return fmt.Errorf("visibilityTimeout: %d is outside 0..%d seconds", s.VisibilityTimeout, MaxVisibilityTimeout)
	case *s.WaitTimeSeconds < 0 || *s.WaitTimeSeconds > maxWaitTimeSeconds:
		return fmt.Errorf("waitTimeSeconds: %d is outside 0..%d seconds", *s.WaitTimeSeconds, maxWaitTimeSeconds)
	}
	if err := s.Credentials.check(); err != nil {
		return err
	}
	return s.checkQueues()
}

func (c *Credentials) check() error {
	if c == nil {
		return nil
	}
	if c.AccessKeyIDSecretRef == nil || c.SecretAccessKeySecretRef == nil {
		return errors.New("credentials: set both accessKeyIdSecretRef and secretAccessKeySecretRef, or neither")
	}
	if err := c.AccessKeyIDSecretRef.Check("credentials.accessKeyIdSecretRef"); err != nil {
		return err
	}
	return c.SecretAccessKeySecretRef.Check("credentials.secretAccessKeySecretRef")
}

func (s *Settings) checkQueues() error {
	if err := s.Queues.Check(); err != nil {
		return err
	}
	dlq := &s.Queues.DLQ
	if dlq.RetentionDays == 0 {
		dlq.RetentionDays = DefaultDLQRetentionDays
	}
	if dlq.RetentionDays < 1 || dlq.RetentionDays > maxRetentionDays {
		return fmt.Errorf("queues.dlq.retentionDays: %d is outside 1..%d", dlq.RetentionDays, maxRetentionDays)
	}
	return nil
}

// SecretRefs implements transport.Kind: the static credentials', if any.
func (s *Settings) SecretRefs() []transport.SecretKeyRef {
	if s.Credentials == nil {
		return nil
	}
	return []transport.SecretKeyRef{*s.Credentials.AccessKeyIDSecretRef, *s.Credentials.SecretAccessKeySecretRef}
}

// PodRole implements transport.Kind: the actorRoleArn, for IRSA.
func (s *Settings) PodRole() string { return s.ActorRoleArn }

// Open implements transport.Kind.
func (s *Settings) Open(name string, opts brokers.Options) (transport.Broker, error) {
	return New(context.Background(), name, *s, opts.HTTPClient)
}

// VisibilityTimeoutFor is the configured visibility timeout, else twice the
// processing timeout (capped at SQS's limit), so a message being processed
// does not reappear meanwhile. Queue and sidecar must agree on it.
func (s *Settings) VisibilityTimeoutFor(processing int32) int32 {
	if s.VisibilityTimeout > 0 {
		return s.VisibilityTimeout
	}
	if processing <= 0 {
		processing = v1alpha1.DefaultProcessing
	}
	return min(2*processing, MaxVisibilityTimeout)
}
