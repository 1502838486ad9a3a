// Package rabbitmq is the RabbitMQ kind of transport: its configuration,
// what the actor's sidecar and KEDA need to reach the broker, and the
// broker client that manages the actors' queues.
package rabbitmq

import (
	"errors"
	"fmt"

	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

// Type is the configuration's "type" of a RabbitMQ transport.
const Type = "rabbitmq"

// Defaults of the service configuration (docs/design.md#service-configuration).
const (
	DefaultPort     = 5672
	DefaultVHost    = "/"
	DefaultUsername = "guest"
	// DefaultExchange is the topic exchange the Asya sidecar declares and
	// publishes every result to when ASYA_RABBITMQ_EXCHANGE is unset. A
	// transport without an exchange uses it, so that the actors' queues
	// are bound where the sidecar publishes (a message that matches no
	// binding is dropped by the broker).
	DefaultExchange = "asya"
)

// Settings is a RabbitMQ transport's "config".
type Settings struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	VHost    string `json:"vhost"`
	Username string `json:"username"`
	// PasswordSecretRef is read by sidecars and KEDA in the actor's namespace.
	PasswordSecretRef *transport.SecretKeyRef `json:"passwordSecretRef,omitempty"`
	// PasswordFile holds the service's own password; without it, "guest".
	PasswordFile     string `json:"passwordFile,omitempty"`
	ManagementURL    string `json:"managementURL,omitempty"`
	Exchange         string `json:"exchange,omitempty"`
	transport.Queues `json:"queues"`
}

var _ transport.Kind = (*Settings)(nil)

// Type implements transport.Kind.
func (*Settings) Type() string { return Type }

// Check implements transport.Kind.
func (s *Settings) Check() error {
	if s.Port == 0 {
		s.Port = DefaultPort
	}
	if s.VHost == "" {
		s.VHost = DefaultVHost
	}
	if s.Username == "" {
		s.Username = DefaultUsername
	}
	if s.Exchange == "" {
		s.Exchange = DefaultExchange
	}
	switch {
	case s.Host == "":
		return errors.New("host: required")
	case s.Port < 1 || s.Port > 65535:
		return fmt.Errorf("port: %d is not a TCP port", s.Port)
	}
	if err := CheckURLUsername(s.Username); err != nil {
		return fmt.Errorf("username: %w", err)
	}
	if err := s.PasswordSecretRef.Check("passwordSecretRef"); err != nil {
		return err
	}
	// RabbitMQ's classic queues count no deliveries: a message the sidecar
	// rejects is dead-lettered at once, and one it requeues comes back
	// without end. A retry count would only look like it works; the
	// default, which every kind shares, is accepted so that a value
	// written for another kind or by a chart's defaults still loads.
	if n := s.Queues.DLQ.MaxRetryCount; n != 0 && n != transport.DefaultMaxRetryCount {
		return fmt.Errorf("queues.dlq.maxRetryCount: %d does nothing on RabbitMQ, whose classic queues count no deliveries "+
			"(a rejected message goes to the DLQ at once); leave it out", n)
	}
	if err := s.Queues.Check(); err != nil {
		return err
	}
	if s.Queues.DLQ.RetentionDays != 0 {
		return errors.New("queues.dlq.retentionDays: only SQS transports support it")
	}
	return nil
}

// SecretRefs implements transport.Kind: the password's, if configured.
func (s *Settings) SecretRefs() []transport.SecretKeyRef {
	if s.PasswordSecretRef == nil {
		return nil
	}
	return []transport.SecretKeyRef{*s.PasswordSecretRef}
}

// PodRole implements transport.Kind: RabbitMQ needs no cloud identity.
func (*Settings) PodRole() string { return "" }

// exchange is where the sidecar of q's actor publishes: the configured
// exchange, or for a flat actor's queue the exchange of its namespace, so
// that no message crosses namespaces (the current sidecar's routing key
// is the bare actor name).
func (s *Settings) exchange(q transport.Queue) string {
	if q.Scoped {
		return s.Exchange + "-" + q.Namespace
	}
	return s.Exchange
}

// UnroutablePolicyPriority is the priority of the policy that gives an
// exchange of asya-sync's its alternate exchange. RabbitMQ applies one
// policy to an exchange, the matching one of the highest priority, and
// the ubiquitous broad ones ("ha-all", pattern ".*") have priority 0: the
// catch must outrank them on the exchanges it matches by exact name, and
// a user's own policy for those exchanges outranks it on purpose, by a
// priority above this one and an alternate-exchange of its own
// (docs/design.md#unroutable-messages).
const UnroutablePolicyPriority = 100

// alternateExchange is the exchange that takes what exchange routes to no
// queue, and the name of the policy that says so.
func alternateExchange(exchange string) string { return exchange + transport.UnroutableSuffix }

var _ transport.Catcher = (*Settings)(nil)

// Catches implements transport.Catcher: the catching queue of the
// transport's exchange (nested actors publish there, and so does a
// gateway left on its default, asya) and, for a flat actor, that of its
// namespace's exchange. The alternate exchange that feeds each is set by
// a policy through the management API, for an argument on the exchange
// itself would make the sidecars and the gateway, which declare it
// without arguments, fail with PRECONDITION_FAILED.
func (s *Settings) Catches(q transport.Queue) ([]transport.Queue, string) {
	dropped := fmt.Sprintf("messages published to exchange %s for no queue are dropped by RabbitMQ", s.exchange(q))
	switch {
	case !s.Queues.AutoCreateQueues():
		return nil, fmt.Sprintf("%s: asya-sync sets up nothing on the broker (%s)", dropped, s.Queues.NotCreatedBecause())
	case s.ManagementURL == "":
		return nil, fmt.Sprintf("%s: the transport has no managementURL, through which asya-sync sets the policy that catches them", dropped)
	}
	catches := []transport.Queue{{Unroutable: true}}
	if q.Scoped {
		catches = append(catches, transport.Queue{Namespace: q.Namespace, Scoped: true, Unroutable: true})
	}
	return catches, ""
}

// Open implements transport.Kind.
func (s *Settings) Open(name string, opts brokers.Options) (transport.Broker, error) {
	return New(name, *s, opts.HTTPClient), nil
}
