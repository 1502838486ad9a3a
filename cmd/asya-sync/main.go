// Command asya-sync serves Metacontroller's CompositeController hooks for
// AsyncActors, and renders an actor's children offline.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/asya-sh/asya-sync/internal/version"
	// The release image has no CA bundle; these roots verify SQS, Pub/Sub and amqps when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"
)

const usage = `asya-sync runs AsyncActors through Metacontroller hooks.

Usage:
  asya-sync serve  [--config FILE] [--listen ADDR] [--metrics-listen ADDR]
                   [--tls-cert-file FILE --tls-key-file FILE [--client-ca-file FILE]]
                   [--auth-token-file FILE] [--auth-token-dir DIR]
                   [--allow-unauthenticated]
                   [--max-body-bytes N]
                   [--max-concurrent-syncs N] [--hook-timeout DURATION]
                   [--actor-status-window DURATION] [--drain-delay DURATION]
                   [--kubeconfig FILE]
  asya-sync render -f ACTOR.yaml [--config FILE]
                   without a configuration, one RabbitMQ transport
                   "rabbitmq" on 127.0.0.1 (guest); touches no broker
  asya-sync write-runtime FILE     writes the embedded runtime script
  asya-sync version                (also --version)

The configuration file defaults to $ASYA_SYNC_CONFIG; $ASYA_RUNTIME_SCRIPT_PATH
replaces the embedded runtime script. The credential files default to
$ASYA_SYNC_TLS_CERT_FILE, $ASYA_SYNC_TLS_KEY_FILE, $ASYA_SYNC_CLIENT_CA_FILE,
$ASYA_SYNC_AUTH_TOKEN_FILE and $ASYA_SYNC_AUTH_TOKEN_DIR (every file in it is
an accepted token, one a file), and are read again when they change. Hook calls
without the token or client certificate get 401; /healthz, /readyz and
/metrics stay open. HTTPS with neither a token nor a client CA is refused
unless --allow-unauthenticated ($ASYA_SYNC_ALLOW_UNAUTHENTICATED=true)
acknowledges that anyone may call the hooks. --max-body-bytes (8 MiB) bounds a hook request;
--max-concurrent-syncs ($ASYA_SYNC_MAX_CONCURRENT_SYNCS, else GOMAXPROCS; 0:
no limit) bounds the syncs computing at once. --hook-timeout (Metacontroller's
webhook timeout, 10s) and --actor-status-window (10m) shape metrics only. On
SIGTERM serve reports not ready and goes on serving for --drain-delay (0; the
chart sets 10s), each answer closing its connection, while a Service stops
routing to it; then it closes its listeners and lets the calls in flight
finish (up to 25s).
With watch.pods whileUnhealthy and watch.namesakes read (the defaults) serve
lists the pods of actors whose workload is not settled and the actors that
claim a queue, as its pod's ServiceAccount, or with --kubeconfig
($KUBECONFIG) outside a cluster.
"asya-sync serve -h" lists the flags with their defaults.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command of args and returns the process's exit code: 0 on
// success and after -h (the flags were asked for), 2 without a command, 1
// on any error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = runServe(args[1:], stderr)
	case "render":
		err = runRender(args[1:], stdout, stderr)
	case "write-runtime":
		err = runWriteRuntime(args[1:])
	case "version", "--version":
		fmt.Fprintln(stdout, version.Get())
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = fmt.Errorf("unknown command %q\n\n%s", args[0], usage)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		// The flag set printed the flags that -h asked for.
		return 0
	default:
		fmt.Fprintln(stderr, "asya-sync:", err)
		return 1
	}
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
