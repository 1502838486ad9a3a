// Command asya-sync serves Metacontroller's CompositeController hooks for
// AsyncActors, and renders an actor's children offline.
package main

import (
	"fmt"
	"os"

	"github.com/asya-sh/asya-sync/internal/version"
)

const usage = `asya-sync runs AsyncActors through Metacontroller hooks.

Usage:
  asya-sync serve  [--config FILE] [--listen ADDR] [--metrics-listen ADDR]
                   [--tls-cert-file FILE --tls-key-file FILE [--client-ca-file FILE]]
                   [--auth-token-file FILE] [--max-body-bytes N]
                   [--max-concurrent-syncs N] [--hook-timeout DURATION]
                   [--actor-status-window DURATION]
  asya-sync render -f ACTOR.yaml [--config FILE]
  asya-sync write-runtime FILE     writes the embedded runtime script
  asya-sync version                (also --version)

The configuration file defaults to $ASYA_SYNC_CONFIG; $ASYA_RUNTIME_SCRIPT_PATH
replaces the embedded runtime script. The credential files default to
$ASYA_SYNC_TLS_CERT_FILE, $ASYA_SYNC_TLS_KEY_FILE, $ASYA_SYNC_CLIENT_CA_FILE and
$ASYA_SYNC_AUTH_TOKEN_FILE, and are read again when they change. Hook calls
without the token or client certificate get 401; /healthz, /readyz and
/metrics stay open. --max-body-bytes (8 MiB) bounds a hook request;
--max-concurrent-syncs (GOMAXPROCS; 0: no limit) bounds the syncs computing
at once. --hook-timeout (Metacontroller's webhook timeout, 10s) and
--actor-status-window (10m) shape metrics only. "asya-sync serve -h" lists
the flags with their defaults.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = runServe(os.Args[2:])
	case "render":
		err = runRender(os.Args[2:], os.Stdout)
	case "write-runtime":
		err = runWriteRuntime(os.Args[2:])
	case "version", "--version":
		fmt.Println(version.Get())
		return
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		err = fmt.Errorf("unknown command %q\n\n%s", os.Args[1], usage)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "asya-sync:", err)
		os.Exit(1)
	}
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
