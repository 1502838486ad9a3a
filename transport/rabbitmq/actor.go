package rabbitmq

import (
	"net"
	"net/url"
	"strconv"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/transport"
)

// UsernameEnv is the sidecar variable that holds the configured username;
// KEDA reads the username from it.
const UsernameEnv = "ASYA_RABBITMQ_USERNAME"

// KEDA authentication parameters, as the rabbitmq scaler names them.
const (
	authUsername = "username"
	authPassword = "password"
)

// SidecarEnv implements transport.Kind.
func (s *Settings) SidecarEnv(q transport.Queue) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "ASYA_RABBITMQ_HOST", Value: s.Host},
		{Name: "ASYA_RABBITMQ_PORT", Value: strconv.Itoa(s.Port)},
		{Name: UsernameEnv, Value: s.Username},
	}
	if s.PasswordSecretRef != nil {
		env = append(env, s.PasswordSecretRef.Env(PasswordEnv))
	}
	env = append(env, corev1.EnvVar{Name: "ASYA_RABBITMQ_EXCHANGE", Value: s.exchange(q)})
	if s.VHost != DefaultVHost {
		env = append(env, corev1.EnvVar{Name: "ASYA_RABBITMQ_URL", Value: s.sidecarURL()})
	}
	return env
}

// Trigger implements transport.Kind with KEDA's rabbitmq scaler.
func (s *Settings) Trigger(q transport.Queue, target string) (string, map[string]string) {
	m := map[string]string{
		"queueName": q.Name(),
		"mode":      "QueueLength",
		"value":     target,
		"protocol":  "amqp",
		"host":      s.kedaHost(),
	}
	if s.VHost != "" && s.VHost != DefaultVHost {
		m["vhostName"] = s.VHost
	}
	return "rabbitmq", m
}

// kedaHost is the AMQP URL KEDA connects to. With a password secret the
// credentials come from the TriggerAuthentication. Without one, the URL
// carries the configured username and no password: KEDA hands the URL to
// amqp091-go, which fills a missing password (and user) with "guest". KEDA
// then logs in as <username>/guest, which is what the sidecar does when it
// has no ASYA_RABBITMQ_PASSWORD and what asya-sync does without a
// passwordFile; for the default user that is guest/guest.
func (s *Settings) kedaHost() string {
	u := url.URL{Scheme: "amqp", Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port))}
	if s.PasswordSecretRef == nil && s.Username != "" {
		u.User = url.User(s.Username)
	}
	return u.String()
}

// TriggerAuth implements transport.Kind: the password from the configured
// secret and the username from the sidecar's environment, so that KEDA
// always logs in as the sidecar does and no secret key for the username
// has to be guessed. KEDA rejects a username without a password, so
// without a password secret there is nothing to give (see kedaHost).
func (s *Settings) TriggerAuth() *kedav1alpha1.TriggerAuthenticationSpec {
	if s.PasswordSecretRef == nil {
		return nil
	}
	return &kedav1alpha1.TriggerAuthenticationSpec{
		SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{s.PasswordSecretRef.AuthTarget(authPassword)},
		Env: []kedav1alpha1.AuthEnvironment{{
			Parameter:     authUsername,
			Name:          UsernameEnv,
			ContainerName: v1alpha1.SidecarContainer,
		}},
	}
}
