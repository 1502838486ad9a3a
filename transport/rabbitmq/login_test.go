package rabbitmq

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/transport"
)

func TestLoginRefusedNamesLoopbackUsersForGuestOnlyOffLocalhost(t *testing.T) {
	for _, tc := range []struct {
		user, host string
		loopback   bool // whether the message explains loopback_users
	}{
		{"guest", "rabbitmq.default.svc.cluster.local", true},
		{"guest", "10.0.0.7", true},
		{"guest", "127.0.0.1", false},
		{"guest", "localhost", false},
		{"guest", "::1", false},
		{"asya", "rabbitmq.default.svc.cluster.local", false},
	} {
		msg := loginRefused(tc.user, tc.host)
		if !strings.Contains(msg, `user "`+tc.user+`"`) {
			t.Errorf("%s@%s: %q does not name the user", tc.user, tc.host, msg)
		}
		if got := strings.Contains(msg, "loopback_users") && strings.Contains(msg, "only from localhost"); got != tc.loopback {
			t.Errorf("%s@%s: explains loopback_users = %v, want %v: %q", tc.user, tc.host, got, tc.loopback, msg)
		}
	}
}

// TestRefusedLoginIsExplained logs in to the real broker through a
// non-loopback address of this machine with a password it refuses: the
// BrokerUnavailable of guest says why a stock broker refuses guest there;
// another user's, and guest's over loopback, say to check the credentials.
func TestRefusedLoginIsExplained(t *testing.T) {
	direct := testSettings(t)
	host, port := forwardFromNonLoopback(t, net.JoinHostPort(direct.Host, strconv.Itoa(direct.Port)))
	wrong := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(wrong, []byte("not-the-password"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, user, host string
		port             int
		want, not        string
	}{
		{"guest off loopback", "guest", host, port, "stock RabbitMQ admits guest only from localhost (see its loopback_users)", ""},
		{"guest over loopback", "guest", direct.Host, direct.Port, "check the transport's username and password", "loopback_users"},
		{"another user", "asya-" + strconv.Itoa(os.Getpid()), host, port, "check the transport's username and password", "loopback_users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a refused login takes the broker about 3 s
			r := newBroker(t, func(s *Settings) {
				s.Host, s.Port, s.Username, s.PasswordFile = tc.host, tc.port, tc.user, wrong
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := r.Ensure(ctx, transport.Queue{Actor: "login"})
			var te *transport.Error
			if !errors.As(err, &te) || te.Reason != transport.ReasonBrokerUnavailable {
				t.Fatalf("Ensure: %v, want BrokerUnavailable", err)
			}
			if !strings.Contains(te.Message, tc.want) || (tc.not != "" && strings.Contains(te.Message, tc.not)) {
				t.Errorf("message %q: want %q in it, and not %q", te.Message, tc.want, tc.not)
			}
		})
	}
}

// forwardFromNonLoopback listens on a non-loopback address of this machine
// and copies each connection to and from target; the client thus reaches
// the broker at an address that is not loopback.
func forwardFromNonLoopback(t *testing.T, target string) (string, int) {
	t.Helper()
	ip := nonLoopbackIP(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			go pipe(in, out)
			go pipe(out, in)
		}
	}()
	return ip.String(), l.Addr().(*net.TCPAddr).Port
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address")
	return nil
}
