package transport

import (
	"fmt"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// Kind is one type of transport: the decoded "config" of a configured
// transport of that type, and everything that follows from it. Each kind
// lives in a package of its own under transport/ and is registered in
// config/kinds.go; nothing else knows which kinds there are. What it says
// is pure data: its broker client is opened through brokers.Kind, which
// the builders never link.
type Kind interface {
	// Type is the configuration's "type" and the sidecar's ASYA_TRANSPORT.
	Type() string
	// Check defaults the decoded settings, then reports the first problem.
	// The error text starts with the key under "config." that is wrong.
	Check() error
	// SecretRefs are the Secrets in the actor's namespace that sidecars
	// and KEDA read, in a stable order.
	SecretRefs() []SecretKeyRef
	// PodRole is the IAM role the actor's pods assume through the actor's
	// own ServiceAccount (IRSA), or "" when they need none.
	PodRole() string
	// SidecarEnv is the sidecar's environment that reaches the broker.
	SidecarEnv(q Queue) []corev1.EnvVar
	// Trigger is the KEDA scaler type and metadata that scale on the
	// queue's length, target messages per replica.
	Trigger(q Queue, target string) (scalerType string, metadata map[string]string)
	// TriggerAuth is what KEDA needs to authenticate against the broker,
	// or nil when the trigger metadata suffices.
	TriggerAuth() *kedav1alpha1.TriggerAuthenticationSpec
	// ManageQueues reports whether asya-sync creates and deletes the
	// transport's queues (queues.manage); the embedded Queues provides it.
	ManageQueues() bool
	// AutoCreateQueues reports whether asya-sync creates missing queues
	// (queues.autoCreate, under queues.manage); a queue it does not create
	// it does not delete either.
	AutoCreateQueues() bool
}

// SecretChecker is implemented by the kinds that can use only some values
// of a referenced Secret key. The sync checks each value Metacontroller
// sends (the Secrets customize asks for) before it makes a queue or a
// workload that would fail on it.
type SecretChecker interface {
	// CheckSecret reports why the value of ref cannot be used.
	CheckSecret(ref SecretKeyRef, value []byte) error
}

// SidecarFiles is implemented by the kinds whose sidecar reads a
// credential from a file (Pub/Sub: a service account key, which the Google
// client libraries read only from the file GOOGLE_APPLICATION_CREDENTIALS
// names). The pod gets the volume; only the sidecar mounts it.
type SidecarFiles interface {
	// SidecarFiles is the volume the sidecar mounts read-only at dir, or
	// nil when it needs none.
	SidecarFiles() (source *corev1.VolumeSource, dir string)
}

// ScopedOnly is implemented by the kinds only the current sidecar speaks
// (Pub/Sub): an actor of the Asya 0.3 shape on such a transport is refused
// with the reason given.
type ScopedOnly interface {
	// ScopedOnly says why the transport serves flat actors only.
	ScopedOnly() string
}

// Catcher is implemented by the kinds whose broker drops, and tells no
// one, a message published for no queue: RabbitMQ, whose sidecars and
// gateway publish to a topic exchange without mandatory, keyed by actor
// name. Such a message (a route naming no actor, or an actor since
// deleted) goes instead to a queue that catches it, which the broker's
// Ensure sets up and Counts counts (docs/design.md#unroutable-messages).
type Catcher interface {
	// Catches are the catching queues of the exchanges q's actor and its
	// gateway publish to; none, and why not, when the transport cannot set
	// them up.
	Catches(q Queue) (catches []Queue, uncaught string)
}

// Addresser is implemented by the kinds whose queues have an address
// beside their name (SQS), for the status of flat actors, which upstream
// gives both.
type Addresser interface {
	// QueueURL is the queue's URL.
	QueueURL(queue string) string
	// QueueIdentifier is what identifies the queue on its service (SQS:
	// its ARN).
	QueueIdentifier(queue string) string
}

// SecretKeyRef names one key of a Secret in the actor's namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Selector returns the ref as the core/v1 type used in env and volumes.
func (r SecretKeyRef) Selector() *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}, Key: r.Key}
}

// Env is the environment variable name, read from the Secret.
func (r SecretKeyRef) Env(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: r.Selector()}}
}

// AuthTarget gives KEDA's authentication parameter from the Secret.
func (r SecretKeyRef) AuthTarget(parameter string) kedav1alpha1.AuthSecretTargetRef {
	return kedav1alpha1.AuthSecretTargetRef{Parameter: parameter, Name: r.Name, Key: r.Key}
}

// Check reports a ref set by half; key is where it is configured. A nil
// ref is no problem.
func (r *SecretKeyRef) Check(key string) error {
	if r == nil {
		return nil
	}
	if r.Name == "" || r.Key == "" {
		return fmt.Errorf("%s: needs both name and key", key)
	}
	return nil
}

// Queues says how a transport's queues are managed: the "queues:" keys of
// every kind, whose Settings embed it.
type Queues struct {
	// Manage false leaves the queues entirely alone (provisioned
	// elsewhere): asya-sync never creates, deletes or purges them, and
	// only checks that the actor's queue exists.
	Manage     *bool `json:"manage,omitempty"`
	AutoCreate *bool `json:"autoCreate,omitempty"`
	DLQ        DLQ   `json:"dlq"`
}

// DLQ configures dead-lettering. RetentionDays is for the kinds that
// support it to default and check.
type DLQ struct {
	Enabled       bool  `json:"enabled"`
	MaxRetryCount int32 `json:"maxRetryCount,omitempty"`
	RetentionDays int32 `json:"retentionDays,omitempty"`
}

// DefaultMaxRetryCount is how often a message is tried before the DLQ.
const DefaultMaxRetryCount = 3

// ManageQueues reports whether asya-sync creates and deletes the queues.
func (q Queues) ManageQueues() bool { return q.Manage == nil || *q.Manage }

// AutoCreateQueues reports whether missing queues are created.
func (q Queues) AutoCreateQueues() bool {
	return q.ManageQueues() && (q.AutoCreate == nil || *q.AutoCreate)
}

// NotCreatedBecause names the key that keeps missing queues from being
// created, for messages: "queues.manage is off" or "queues.autoCreate is
// off" ("" when they are created).
func (q Queues) NotCreatedBecause() string {
	switch {
	case !q.ManageQueues():
		return "queues.manage is off"
	case !q.AutoCreateQueues():
		return "queues.autoCreate is off"
	}
	return ""
}

// Check defaults and checks what every kind shares; errors start with
// "queues.".
func (q *Queues) Check() error {
	if !q.ManageQueues() && q.AutoCreate != nil && *q.AutoCreate {
		return fmt.Errorf("queues.autoCreate: true contradicts queues.manage: false, which leaves queues alone")
	}
	if q.DLQ.MaxRetryCount == 0 {
		q.DLQ.MaxRetryCount = DefaultMaxRetryCount
	}
	if q.DLQ.MaxRetryCount < 1 {
		return fmt.Errorf("queues.dlq.maxRetryCount: %d must be at least 1", q.DLQ.MaxRetryCount)
	}
	return nil
}
