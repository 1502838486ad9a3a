package rabbitmq

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/transport"
)

// TestSidecarEnv: the sidecar is always told the exchange its queue is
// bound to, and a vhost other than "/" reaches it as ASYA_RABBITMQ_URL
// with the password left to the kubelet's expansion of the Secret's
// variable.
func TestSidecarEnv(t *testing.T) {
	secret := &transport.SecretKeyRef{Name: "mq", Key: "password"}
	passwordEnv := corev1.EnvVar{Name: PasswordEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secret.Selector()}}
	base := []corev1.EnvVar{
		{Name: "ASYA_RABBITMQ_HOST", Value: "mq.example"},
		{Name: "ASYA_RABBITMQ_PORT", Value: "5672"},
		{Name: UsernameEnv, Value: "asya"},
	}
	tests := []struct {
		name   string
		change func(*Settings)
		want   []corev1.EnvVar
	}{
		{"no exchange configured: the sidecar's own default, said out loud", nil,
			append(base[:3:3], corev1.EnvVar{Name: "ASYA_RABBITMQ_EXCHANGE", Value: "asya"})},
		{"vhost with a password Secret", func(s *Settings) { s.VHost, s.PasswordSecretRef, s.Exchange = "asya-vh", secret, "jobs" },
			append(base[:3:3], passwordEnv, corev1.EnvVar{Name: "ASYA_RABBITMQ_EXCHANGE", Value: "jobs"},
				corev1.EnvVar{Name: "ASYA_RABBITMQ_URL", Value: "amqp://asya:$(ASYA_RABBITMQ_PASSWORD)@mq.example:5672/asya-vh"})},
		{"vhost needing escapes, no password Secret", func(s *Settings) { s.VHost = "team/a b" },
			append(base[:3:3], corev1.EnvVar{Name: "ASYA_RABBITMQ_EXCHANGE", Value: "asya"},
				corev1.EnvVar{Name: "ASYA_RABBITMQ_URL", Value: "amqp://asya@mq.example:5672/team%2Fa%20b"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Settings{Host: "mq.example", Username: "asya"}
			if tt.change != nil {
				tt.change(s)
			}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s.SidecarEnv(transport.Queue{})); diff != "" {
				t.Errorf("sidecar env (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSidecarURLParsesAsTheSidecarDoes: the sidecar hands
// ASYA_RABBITMQ_URL to its AMQP client, which must read back the vhost
// and the (expanded) credentials exactly.
func TestSidecarURLParsesAsTheSidecarDoes(t *testing.T) {
	for _, vhost := range []string{"asya-vh", "team/a", "with space", "ünï"} {
		s := &Settings{Host: "mq", Port: 5672, VHost: vhost, Username: "user.name", PasswordSecretRef: &transport.SecretKeyRef{Name: "s", Key: "k"}}
		expanded := s.sidecarURL()
		expanded = expanded[:len("amqp://user.name:")] + "pa:ss@w0rd!" + expanded[len("amqp://user.name:$(ASYA_RABBITMQ_PASSWORD)"):]
		u, err := amqp.ParseURI(expanded)
		if err != nil {
			t.Fatalf("vhost %q: %s: %v", vhost, expanded, err)
		}
		if u.Vhost != vhost || u.Username != "user.name" || u.Password != "pa:ss@w0rd!" || u.Host != "mq" || u.Port != 5672 {
			t.Errorf("vhost %q: parsed %+v", vhost, u)
		}
	}
}

func TestCheckURLCredential(t *testing.T) {
	for v, ok := range map[string]bool{
		"guest": true, "s3cr3t-._~!$&'()*+,;=:@": true, "": true,
		"a/b": false, "a?b": false, "a#b": false, "a%41": false, "a b": false, "pässword": false, `a"b`: false,
	} {
		if err := CheckURLCredential(v); (err == nil) != ok {
			t.Errorf("CheckURLCredential(%q) = %v, want ok=%v", v, err, ok)
		}
	}
}
