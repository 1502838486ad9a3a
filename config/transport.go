package config

import (
	"encoding/json"
	"errors"
	"fmt"
)

type rawTransport struct {
	Type    string          `json:"type"`
	Enabled *bool           `json:"enabled"`
	Config  json.RawMessage `json:"config"`
}

// build turns a raw transport into a checked one. Its errors start with the
// key below "transports.<name>." that is wrong.
func (rt rawTransport) build(name string) (Transport, error) {
	t := Transport{Name: name, Type: rt.Type, Enabled: rt.Enabled == nil || *rt.Enabled}
	cfg := rt.Config
	if len(cfg) == 0 || string(cfg) == "null" {
		cfg = json.RawMessage("{}")
	}
	var settings interface{ defaultAndCheck() error }
	switch rt.Type {
	case TypeRabbitMQ:
		t.RabbitMQ = &RabbitMQ{}
		settings = t.RabbitMQ
	case TypeSQS:
		t.SQS = &SQS{}
		settings = t.SQS
	case "":
		return t, errors.New("type: required (rabbitmq or sqs)")
	default:
		return t, fmt.Errorf("type: unknown transport type %q (want rabbitmq or sqs)", rt.Type)
	}
	if err := decodeStrict(cfg, settings); err != nil {
		return t, fmt.Errorf("config: %w", err)
	}
	if err := settings.defaultAndCheck(); err != nil {
		return t, fmt.Errorf("config.%w", err)
	}
	return t, nil
}

func (r *RabbitMQ) defaultAndCheck() error {
	if r.Port == 0 {
		r.Port = DefaultRabbitMQPort
	}
	if r.VHost == "" {
		r.VHost = DefaultVHost
	}
	if r.Username == "" {
		r.Username = DefaultUsername
	}
	switch {
	case r.Host == "":
		return errors.New("host: required")
	case r.Port < 1 || r.Port > 65535:
		return fmt.Errorf("port: %d is not a TCP port", r.Port)
	}
	if err := r.PasswordSecretRef.check("passwordSecretRef"); err != nil {
		return err
	}
	return r.Queues.defaultAndCheck(false)
}

func (s *SQS) defaultAndCheck() error {
	if s.WaitTimeSeconds == nil {
		w := int32(DefaultWaitTimeSeconds)
		s.WaitTimeSeconds = &w
	}
	switch {
	case s.Region == "":
		return errors.New("region: required")
	case s.AccountID == "":
		return errors.New("accountId: required")
	case s.VisibilityTimeout < 0 || s.VisibilityTimeout > 43200:
		return fmt.Errorf("visibilityTimeout: %d is outside 0..43200 seconds", s.VisibilityTimeout)
	case *s.WaitTimeSeconds < 0 || *s.WaitTimeSeconds > 20:
		return fmt.Errorf("waitTimeSeconds: %d is outside 0..20 seconds", *s.WaitTimeSeconds)
	}
	if c := s.Credentials; c != nil {
		if c.AccessKeyIDSecretRef == nil || c.SecretAccessKeySecretRef == nil {
			return errors.New("credentials: set both accessKeyIdSecretRef and secretAccessKeySecretRef, or neither")
		}
		if err := c.AccessKeyIDSecretRef.check("credentials.accessKeyIdSecretRef"); err != nil {
			return err
		}
		if err := c.SecretAccessKeySecretRef.check("credentials.secretAccessKeySecretRef"); err != nil {
			return err
		}
	}
	return s.Queues.defaultAndCheck(true)
}

func (q *Queues) defaultAndCheck(retention bool) error {
	if q.DLQ.MaxRetryCount == 0 {
		q.DLQ.MaxRetryCount = DefaultMaxRetryCount
	}
	if q.DLQ.MaxRetryCount < 1 {
		return fmt.Errorf("queues.dlq.maxRetryCount: %d must be at least 1", q.DLQ.MaxRetryCount)
	}
	if !retention {
		if q.DLQ.RetentionDays != 0 {
			return errors.New("queues.dlq.retentionDays: only SQS transports support it")
		}
		return nil
	}
	if q.DLQ.RetentionDays == 0 {
		q.DLQ.RetentionDays = DefaultDLQRetentionDays
	}
	if q.DLQ.RetentionDays < 1 || q.DLQ.RetentionDays > 14 {
		return fmt.Errorf("queues.dlq.retentionDays: %d is outside 1..14", q.DLQ.RetentionDays)
	}
	return nil
}

func (r *SecretKeyRef) check(key string) error {
	if r == nil {
		return nil
	}
	if r.Name == "" || r.Key == "" {
		return fmt.Errorf("%s: needs both name and key", key)
	}
	return nil
}
