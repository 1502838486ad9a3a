// Command pubsubemulator serves Google Cloud Pub/Sub's API on loopback for
// the integration tests and the node tier: pstest, the fake server
// cloud.google.com/go/pubsub/v2 ships, as a process (.ci/services.sh
// starts it). It keeps everything in memory and checks no credentials.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"cloud.google.com/go/pubsub/v2/pstest"
)

func main() {
	address := flag.String("address", "127.0.0.1:8085", "host:port to listen on")
	flag.Parse()
	srv := pstest.NewServerWithAddress(*address)
	fmt.Printf("Pub/Sub emulator (pstest) listening on %s\n", srv.Addr)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	_ = srv.Close()
}
