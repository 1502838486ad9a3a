package rabbitmq

import (
	"fmt"
	"net"
	"strings"
)

// loginRefused explains a refused AMQP login. The broker's reply is the
// same for a wrong password and for guest over a non-loopback connection
// (it logs the difference, it does not send it), so the explanation names
// the likely cause: stock RabbitMQ lists guest in loopback_users, which
// admits it only over connections to a loopback address.
func loginRefused(username, host string) string {
	if username == DefaultUsername && !isLoopbackHost(host) {
		return fmt.Sprintf("it refused the login of user %q: stock RabbitMQ admits guest only from localhost (see its loopback_users); "+
			"create a user for asya-sync on the broker and set it as the transport's username (or allow guest in loopback_users)", username)
	}
	return fmt.Sprintf("it refused the login of user %q: check the transport's username and password", username)
}

// isLoopbackHost reports whether host names this machine: localhost or a
// loopback address. Other names are not resolved; in a cluster they are
// Services, never loopback.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
