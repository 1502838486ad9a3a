// Command pause is the pod sandbox of the node e2e tier: it holds the pod's
// namespaces until it is told to stop, as the upstream pause image does.
// The tier builds its images offline, so it builds this one too.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
