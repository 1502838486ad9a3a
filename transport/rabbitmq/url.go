package rabbitmq

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/asya-sh/asya-sync/transport"
)

// The Asya sidecar builds its AMQP URL from ASYA_RABBITMQ_HOST, _PORT,
// _USERNAME and _PASSWORD as amqp://user:password@host:port/ without
// escaping anything, always with the vhost "/"; only ASYA_RABBITMQ_URL,
// when set, replaces the whole URL. So a username or password reaches the
// broker intact only if it needs no escaping in a URL's userinfo, and a
// vhost other than "/" needs ASYA_RABBITMQ_URL (docs/design.md#queues).

// urlCredentialChars are the characters a URL's userinfo holds as they
// are, besides letters and digits (RFC 3986 unreserved and sub-delims,
// and ":" and "@", which Go's URL parser takes in the password).
const urlCredentialChars = "-._~!$&'()*+,;=:@"

// CheckURLCredential reports a username or password the sidecar's
// unescaped URL would carry wrongly, naming the first such character.
func CheckURLCredential(v string) error {
	for _, r := range v {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(urlCredentialChars, r)) {
			continue
		}
		return fmt.Errorf("holds %q, which the Asya sidecar's AMQP URL cannot carry (it does not escape credentials); "+
			"use only letters, digits and %s", r, urlCredentialChars)
	}
	return nil
}

// CheckURLUsername is CheckURLCredential for a username, where ":" also
// breaks the URL: it ends the username and starts the password.
func CheckURLUsername(v string) error {
	if strings.ContainsRune(v, ':') {
		return fmt.Errorf("holds ':', which ends the username in the Asya sidecar's AMQP URL (amqp://user:password@host)")
	}
	return CheckURLCredential(v)
}

var _ transport.SecretChecker = (*Settings)(nil)

// CheckSecret implements transport.SecretChecker: the password must
// survive the sidecar's unescaped URL.
func (s *Settings) CheckSecret(ref transport.SecretKeyRef, value []byte) error {
	if s.PasswordSecretRef == nil || ref != *s.PasswordSecretRef {
		return nil
	}
	if err := CheckURLCredential(string(value)); err != nil {
		return fmt.Errorf("the RabbitMQ password %w", err)
	}
	return nil
}

// PasswordEnv is the sidecar variable that holds the password Secret's
// value.
const PasswordEnv = "ASYA_RABBITMQ_PASSWORD"

// sidecarURL is ASYA_RABBITMQ_URL for a vhost other than "/". The password
// stays in its Secret: the kubelet expands $(ASYA_RABBITMQ_PASSWORD) from
// the variable defined before it, so the pod spec never holds it. Without
// a password Secret the URL has none, and the sidecar's AMQP client uses
// "guest", as the sidecar does without ASYA_RABBITMQ_PASSWORD.
func (s *Settings) sidecarURL() string {
	userinfo := s.Username
	if s.PasswordSecretRef != nil {
		userinfo += ":$(" + PasswordEnv + ")"
	}
	host := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	return "amqp://" + userinfo + "@" + host + "/" + url.PathEscape(s.VHost)
}
