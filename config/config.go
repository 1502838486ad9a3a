// Package config loads and checks the service configuration (SPEC §4).
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Transport types.
const (
	TypeRabbitMQ = "rabbitmq"
	TypeSQS      = "sqs"
)

// Config is the whole service configuration.
type Config struct {
	SidecarImage string `json:"sidecarImage"`
	// SidecarSecurityContext is the injected sidecar's securityContext
	// unless an actor sets its own; DefaultSidecarSecurityContext when the
	// key is absent.
	SidecarSecurityContext *corev1.SecurityContext `json:"sidecarSecurityContext"`
	GatewayURL             string                  `json:"gatewayURL"`
	QueueCacheTTL          metav1.Duration         `json:"queueCacheTTL"`
	Transports             map[string]Transport    `json:"transports"`
}

// Transport is one named transport. Exactly one of RabbitMQ and SQS is set,
// according to Type.
type Transport struct {
	Name     string    `json:"-"`
	Type     string    `json:"type"`
	Enabled  bool      `json:"enabled"`
	RabbitMQ *RabbitMQ `json:"-"`
	SQS      *SQS      `json:"-"`
}

// RabbitMQ is a RabbitMQ transport's settings.
type RabbitMQ struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	VHost    string `json:"vhost"`
	Username string `json:"username"`
	// PasswordSecretRef is read by sidecars and KEDA in the actor's namespace.
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`
	// PasswordFile holds the service's own password; without it, "guest".
	PasswordFile  string `json:"passwordFile,omitempty"`
	ManagementURL string `json:"managementURL,omitempty"`
	Exchange      string `json:"exchange,omitempty"`
	Queues        Queues `json:"queues"`
}

// SQS is an Amazon SQS transport's settings.
type SQS struct {
	Region            string            `json:"region"`
	AccountID         string            `json:"accountId"`
	Endpoint          string            `json:"endpoint,omitempty"`
	ActorRoleArn      string            `json:"actorRoleArn,omitempty"`
	VisibilityTimeout int32             `json:"visibilityTimeout,omitempty"`
	WaitTimeSeconds   *int32            `json:"waitTimeSeconds,omitempty"`
	Credentials       *SQSCredentials   `json:"credentials,omitempty"`
	Tags              map[string]string `json:"tags,omitempty"`
	Queues            Queues            `json:"queues"`
}

// SQSCredentials name the Secrets that hold static AWS credentials for
// sidecars and KEDA.
type SQSCredentials struct {
	AccessKeyIDSecretRef     *SecretKeyRef `json:"accessKeyIdSecretRef"`
	SecretAccessKeySecretRef *SecretKeyRef `json:"secretAccessKeySecretRef"`
}

// SecretKeyRef names one key of a Secret in the actor's namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Queues says how the transport's queues are managed.
type Queues struct {
	AutoCreate *bool `json:"autoCreate,omitempty"`
	DLQ        DLQ   `json:"dlq"`
}

// DLQ configures dead-lettering.
type DLQ struct {
	Enabled       bool  `json:"enabled"`
	MaxRetryCount int32 `json:"maxRetryCount,omitempty"`
	RetentionDays int32 `json:"retentionDays,omitempty"`
}

// Defaults of SPEC §4.
const (
	DefaultQueueCacheTTL    = 5 * time.Minute
	DefaultRabbitMQPort     = 5672
	DefaultVHost            = "/"
	DefaultUsername         = "guest"
	DefaultWaitTimeSeconds  = 20
	DefaultMaxRetryCount    = 3
	DefaultDLQRetentionDays = 14
)

// SidecarUID is the numeric id of the user the published sidecar image
// runs as. The image names its user (app), and the kubelet can verify
// runAsNonRoot only for a numeric id.
const SidecarUID = 1000

// DefaultSidecarSecurityContext passes the Pod Security "restricted"
// profile: no privilege escalation, no capabilities, a non-root user given
// by number, the runtime's default seccomp profile.
func DefaultSidecarSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](SidecarUID),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// Selector returns the ref as the core/v1 type used in env and volumes.
func (r SecretKeyRef) Selector() *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}, Key: r.Key}
}

// AutoCreateQueues reports whether missing queues are created.
func (q Queues) AutoCreateQueues() bool { return q.AutoCreate == nil || *q.AutoCreate }

// Load reads the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes YAML strictly, applies defaults and checks consistency.
func Parse(data []byte) (*Config, error) {
	var raw struct {
		SidecarImage           string                  `json:"sidecarImage"`
		SidecarSecurityContext *corev1.SecurityContext `json:"sidecarSecurityContext"`
		GatewayURL             string                  `json:"gatewayURL"`
		QueueCacheTTL          *metav1.Duration        `json:"queueCacheTTL"`
		Transports             map[string]rawTransport `json:"transports"`
	}
	if err := decodeStrict(data, &raw); err != nil {
		return nil, err
	}
	cfg := &Config{
		SidecarImage:           raw.SidecarImage,
		SidecarSecurityContext: raw.SidecarSecurityContext,
		GatewayURL:             raw.GatewayURL,
		Transports:             map[string]Transport{},
	}
	if cfg.SidecarSecurityContext == nil {
		cfg.SidecarSecurityContext = DefaultSidecarSecurityContext()
	}
	cfg.QueueCacheTTL.Duration = DefaultQueueCacheTTL
	if raw.QueueCacheTTL != nil {
		if raw.QueueCacheTTL.Duration < 0 {
			return nil, fmt.Errorf("queueCacheTTL: must not be negative")
		}
		cfg.QueueCacheTTL = *raw.QueueCacheTTL
	}
	for name, rt := range raw.Transports {
		t, err := rt.build(name)
		if err != nil {
			return nil, fmt.Errorf("transports.%s.%w", name, err)
		}
		cfg.Transports[name] = t
	}
	return cfg, nil
}

// TransportNames returns the configured transport names, sorted.
func (c *Config) TransportNames() []string {
	names := make([]string, 0, len(c.Transports))
	for n := range c.Transports {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SecretRefs lists every Secret reference of the transport, in a stable order.
func (t Transport) SecretRefs() []SecretKeyRef {
	var refs []SecretKeyRef
	switch {
	case t.RabbitMQ != nil && t.RabbitMQ.PasswordSecretRef != nil:
		refs = append(refs, *t.RabbitMQ.PasswordSecretRef)
	case t.SQS != nil && t.SQS.Credentials != nil:
		refs = append(refs, *t.SQS.Credentials.AccessKeyIDSecretRef, *t.SQS.Credentials.SecretAccessKeySecretRef)
	}
	return refs
}

func decodeStrict(data []byte, into any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// MaxVisibilityTimeout is SQS's limit, in seconds; defaultProcessing is
// the AsyncActor default of spec.timeout.processing.
const (
	MaxVisibilityTimeout = 43200
	defaultProcessing    = 300
)

// VisibilityTimeoutFor is the configured visibility timeout, else twice the
// processing timeout (capped at SQS's limit), so a message being processed
// does not reappear meanwhile. Queue and sidecar must agree on it.
func (s *SQS) VisibilityTimeoutFor(processing int32) int32 {
	if s.VisibilityTimeout > 0 {
		return s.VisibilityTimeout
	}
	if processing <= 0 {
		processing = defaultProcessing
	}
	return min(2*processing, MaxVisibilityTimeout)
}
