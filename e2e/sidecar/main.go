// Command asya-sidecar is a test stand-in for the Asya sidecar
// (github.com/deliveryhero/asya, src/asya-sidecar), built for the node e2e
// tier, where the published image cannot be used. It follows the
// sidecar's documented contract as far as asya-sync's pods exercise it:
// the environment asya-sync gives the asya-sidecar container, the
// runtime's Unix socket protocol, routing to the next actor, happy-end
// and error-end, end actors, and a graceful SIGTERM. It reports no
// progress to a gateway and serves no metrics. The chart's default
// sidecar image stays the published one.
//
// It is either generation of the sidecar: 0.3 (the length-prefixed
// socket protocol, route {actors, current}, queues asya-{actor}) or the
// current one (HTTP on the socket, route {prev, curr, next}, queues
// asya-{namespace}-{actor}, the sink and the sump), chosen at start by
// generationOf (current_config.go); the current one is either line, 0.5
// or 1.x, of what becomes of a handler's error (lineVar,
// current_retry.go). The transports and the main loop are shared; the
// queue names, the runtime's protocol and what becomes of a message are
// the generation's.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	cfg, err := loadConfig(os.Getenv)
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("exiting", "error", err)
		stop()
		os.Exit(1)
	}
	log.Info("stopped")
}

// run serves the actor's queue until ctx ends, then returns nil once the
// message in hand is finished. An error means the sidecar cannot go on.
func run(ctx context.Context, cfg config, log *slog.Logger) error {
	log.Info("starting", "actor", cfg.Actor, "transport", cfg.Transport, "queue", cfg.queue(cfg.Actor),
		"end_actor", cfg.IsEndActor, "runtime_timeout", cfg.RuntimeTimeout, "generation", cfg.generation())
	if cfg.GatewayURL != "" {
		if err := checkGateway(ctx, cfg.GatewayURL); err != nil {
			return fmt.Errorf("Gateway health check failed - sidecar cannot start: %w", err)
		}
	}
	q, err := openTransport(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer q.close()
	s := &sidecar{cfg: cfg, rt: newRuntimeClient(cfg), q: q, log: log, readyWait: runtimeReadyWait}
	s.each = s.handle
	if cfg.Current != nil { // the one place the generation picks the message handling
		s.readyWait, s.each = cfg.Current.ReadyTimeout, newCurrentRouter(cfg, q, log).handle
	}
	return s.loop(ctx)
}

// checkGateway asks the gateway's /health for a 200, as the real sidecar
// does before it consumes. The current one asks again every 5 s for up
// to ASYA_GATEWAY_READY_TIMEOUT; this one asks once in either
// generation, which only matters with a gateway, and asya-sync's actors
// have none.
func checkGateway(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	return nil
}
