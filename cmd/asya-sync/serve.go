package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/finalize"
	"github.com/asya-sh/asya-sync/internal/version"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport"
)

func runServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	configPath := fs.String("config", os.Getenv("ASYA_SYNC_CONFIG"), "service configuration file")
	listen := fs.String("listen", ":8080", "address to listen on")
	maxBody := fs.Int64("max-body-bytes", DefaultMaxBody, "largest hook request accepted")
	hookTimeout := fs.Duration("hook-timeout", 10*time.Second, "Metacontroller's webhook timeout, exported for the hook latency alert")
	actorWindow := fs.Duration("actor-status-window", DefaultActorStatusWindow, "how long asya_sync_actors counts an actor after its last sync here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := zerolog.New(os.Stdout).With().Timestamp().Logger()
	build := version.Get()
	log.Info().Str("version", build.Version).Str("commit", build.Commit).Str("go", build.GoVersion).Msg("starting asya-sync")
	if *configPath == "" {
		return errors.New("serve needs --config or ASYA_SYNC_CONFIG")
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	script, err := asyaruntime.Load(os.Getenv("ASYA_RUNTIME_SCRIPT_PATH"))
	if err != nil {
		return err
	}
	m := newMetrics()
	m.addServiceMetrics(*hookTimeout, *actorWindow)
	brokers, err := transport.Open(cfg, transport.Options{Metrics: transport.NewMetrics(m.registry)})
	if err != nil {
		return err
	}
	defer brokers.Close()
	srv := &server{
		sync:     &hooksync.Handler{Config: cfg, Transports: brokers, Script: script, Now: time.Now},
		finalize: &finalize.Handler{Config: cfg, Transports: brokers, Now: time.Now},
		log:      log,
		metrics:  m,
		maxBody:  *maxBody,
	}
	return srv.listenAndServe(*listen)
}

// listenAndServe serves until SIGTERM or SIGINT, then reports not ready and
// drains in-flight hooks.
func (s *server) listenAndServe(addr string) error {
	httpSrv := &http.Server{Addr: addr, Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.ListenAndServe() }()
	s.log.Info().Str("listen", addr).Msg("serving hooks")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	return httpSrv.Shutdown(shutdownCtx)
}
