package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/actorindex"
	"github.com/asya-sh/asya-sync/internal/version"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

// serveFlags are the serve command's settings.
type serveFlags struct {
	configPath, listen, metricsListen string
	maxBody                           int64
	hookTimeout, actorWindow          time.Duration
	maxSyncs                          int
	// drainDelay: how long serve goes on serving after SIGTERM, reporting
	// not ready, before it closes its listeners.
	drainDelay time.Duration
	files      credentialFiles
	// allowUnauthenticated acknowledges HTTPS hooks that check no caller
	// (no token, no client CA): without it serve refuses to start so.
	allowUnauthenticated bool
	// kubeconfig: the API server's address and credentials for reading
	// pods and actors, outside a cluster.
	kubeconfig string
}

func parseServeFlags(args []string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := serveFlagSet(&f)
	fs.SetOutput(stderr)
	if v := os.Getenv("ASYA_SYNC_MAX_CONCURRENT_SYNCS"); v != "" {
		if err := fs.Set("max-concurrent-syncs", v); err != nil {
			return f, fmt.Errorf("ASYA_SYNC_MAX_CONCURRENT_SYNCS=%q: %w", v, err)
		}
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.configPath == "" {
		return f, errors.New("serve needs --config or ASYA_SYNC_CONFIG")
	}
	if err := f.checkAuth(); err != nil {
		return f, err
	}
	return f, nil
}

// checkAuth refuses HTTPS hooks that check no caller unless acknowledged.
// HTTPS says the hooks were meant to be protected; without a token or a
// client CA anyone who reaches the Service may call /finalize, which
// deletes queues, so turning the token off alone is taken for a mistake.
// Plain HTTP without either is the documented opt-out (a mesh or a
// NetworkPolicy guards the hooks) and only logs a warning.
func (f serveFlags) checkAuth() error {
	if f.files.tls() && !f.files.authenticates() && !f.allowUnauthenticated {
		return errors.New("HTTPS hooks without --auth-token-file, --auth-token-dir or --client-ca-file accept calls from anyone, " +
			"including /finalize, which deletes queues: give a token file (chart: hooks.auth.token.enabled=true) " +
			"or a client CA (hooks.auth.mtls), or acknowledge it with --allow-unauthenticated or " +
			"ASYA_SYNC_ALLOW_UNAUTHENTICATED=true (chart: hooks.auth.allowUnauthenticated=true)")
	}
	return nil
}

// serveFlagSet defines the serve command's flags into f; the usage text
// names each of them.
func serveFlagSet(f *serveFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.configPath, "config", os.Getenv("ASYA_SYNC_CONFIG"), "service configuration file")
	fs.StringVar(&f.listen, "listen", ":8080", "address to listen on")
	fs.StringVar(&f.metricsListen, "metrics-listen", os.Getenv("ASYA_SYNC_METRICS_LISTEN"),
		"also serve /metrics, /healthz and /readyz, over plain HTTP, on this address")
	fs.Int64Var(&f.maxBody, "max-body-bytes", DefaultMaxBody, "largest hook request accepted")
	fs.DurationVar(&f.hookTimeout, "hook-timeout", 10*time.Second, "Metacontroller's webhook timeout, exported for the hook latency alert")
	fs.IntVar(&f.maxSyncs, "max-concurrent-syncs", runtime.GOMAXPROCS(0), "syncs computing at once; more wait their turn in arrival order (0: no limit; default $ASYA_SYNC_MAX_CONCURRENT_SYNCS, else GOMAXPROCS)")
	fs.DurationVar(&f.actorWindow, "actor-status-window", DefaultActorStatusWindow, "how long asya_sync_actors counts an actor after its last sync here")
	fs.DurationVar(&f.drainDelay, "drain-delay", 0,
		"on SIGTERM, go on serving this long, reporting not ready and closing each connection after its next answer, "+
			"before closing the listeners: the time a Service takes to stop sending new connections here")
	fs.StringVar(&f.files.certFile, "tls-cert-file", os.Getenv("ASYA_SYNC_TLS_CERT_FILE"), "serve HTTPS with this PEM certificate (chain)")
	fs.StringVar(&f.files.keyFile, "tls-key-file", os.Getenv("ASYA_SYNC_TLS_KEY_FILE"), "private key of --tls-cert-file")
	fs.StringVar(&f.files.clientCAFile, "client-ca-file", os.Getenv("ASYA_SYNC_CLIENT_CA_FILE"), "require hook calls to present a client certificate signed by this CA")
	fs.StringVar(&f.files.tokenFile, "auth-token-file", os.Getenv("ASYA_SYNC_AUTH_TOKEN_FILE"), "require hook calls to present Authorization: Bearer <the file's content>")
	fs.StringVar(&f.files.tokenDir, "auth-token-dir", os.Getenv("ASYA_SYNC_AUTH_TOKEN_DIR"),
		"require hook calls to present Authorization: Bearer <the content of any file in this directory> (a mounted Secret: one token a key)")
	fs.BoolVar(&f.allowUnauthenticated, "allow-unauthenticated", os.Getenv("ASYA_SYNC_ALLOW_UNAUTHENTICATED") == "true",
		"serve HTTPS hooks without a token (file or directory) or --client-ca-file: anyone who reaches them may call /finalize, which deletes queues")
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"),
		"read pods and actors (watch.pods whileUnhealthy, watch.namesakes read) with this kubeconfig rather than the pod's ServiceAccount")
	return fs
}

func runServe(args []string, stderr io.Writer) error {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	log := zerolog.New(os.Stdout).With().Timestamp().Logger()
	build := version.Get()
	log.Info().Str("version", build.Version).Str("commit", build.Commit).Str("go", build.GoVersion).Msg("starting asya-sync")
	srv, creds, opened, err := newServer(f, log)
	if err != nil {
		return err
	}
	defer opened.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hooks, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	var open net.Listener
	if f.metricsListen != "" {
		if open, err = net.Listen("tcp", f.metricsListen); err != nil {
			hooks.Close()
			return err
		}
	}
	return srv.run(ctx, creds, hooks, open, drainPlan{delay: f.drainDelay, timeout: shutdownTimeout})
}

// shutdownTimeout bounds the wait for the hook calls in flight once the
// listeners are closed. Metacontroller gives up on a call after its webhook
// timeout (10 s by default) anyway.
const shutdownTimeout = 25 * time.Second

// drainPlan is how serve stops once told to. For delay it goes on serving
// every call, new connections included, while /readyz reports not ready
// and each answer closes its connection (drainWatch.handler); then it
// closes its listeners and waits up to timeout for the calls in flight.
//
// In a cluster a terminating pod keeps receiving new connections through
// its Service until the endpoint change has reached every node's proxy; a
// listener closed at once refuses them, and Metacontroller backs off the
// actor whose call failed. The delay covers that propagation.
type drainPlan struct {
	delay, timeout time.Duration
	// after ends the delay; time.After unless a test ends it itself.
	after func(time.Duration) <-chan time.Time
}

func (p drainPlan) wait() <-chan time.Time {
	if p.after != nil {
		return p.after(p.delay)
	}
	return time.After(p.delay)
}

// drainWatch marks the calls made while draining and counts those that
// came on connections opened since the drain began: the Service still
// routing new connections here. The log line at the end of the delay says
// how many and when the last came, which tells whether the delay was long
// enough.
type drainWatch struct {
	draining *atomic.Bool
	mu       sync.Mutex
	start    time.Time
	calls    int
	last     time.Duration
}

type acceptedAtKey struct{}

// accepted stamps a connection with the time it was accepted
// (http.Server.ConnContext).
func (d *drainWatch) accepted(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, acceptedAtKey{}, time.Now())
}

func (d *drainWatch) begin() {
	d.mu.Lock()
	d.start = time.Now()
	d.mu.Unlock()
	d.draining.Store(true)
}

// handler answers every call made while draining with Connection: close.
// An HTTP/1.1 client then makes its next call on a new connection, which
// the Service routes to another replica once the endpoint change has
// arrived; over HTTP/2 the server sends GOAWAY after the answer and the
// client moves its next calls the same way. A keep-alive connection is
// thus closed by its own answer, which the client reads, rather than under
// a client about to reuse it; only one idle for the whole delay is closed
// at its end.
func (d *drainWatch) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.draining.Load() {
			w.Header().Set("Connection", "close")
			if r.Method == http.MethodPost {
				d.count(r.Context())
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (d *drainWatch) count(ctx context.Context) {
	at, _ := ctx.Value(acceptedAtKey{}).(time.Time)
	d.mu.Lock()
	defer d.mu.Unlock()
	if at.After(d.start) {
		d.calls++
		d.last = at.Sub(d.start)
	}
}

func (d *drainWatch) read() (int, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls, d.last
}

// newServer loads the configuration and the runtime script, opens the
// brokers (the caller closes them) and sets up metrics and credentials.
func newServer(f serveFlags, log zerolog.Logger) (*server, *credentials, brokers.Set, error) {
	cfg, err := config.Load(f.configPath)
	if err != nil {
		return nil, nil, brokers.Set{}, err
	}
	script, err := runtimeScript(cfg)
	if err != nil {
		return nil, nil, brokers.Set{}, err
	}
	m := newMetrics()
	m.addServiceMetrics(f.hookTimeout, f.actorWindow)
	creds, err := newCredentials(f.files, log, m.registry)
	if err != nil {
		return nil, nil, brokers.Set{}, err
	}
	opened, err := brokers.Open(cfg.Enabled(), cfg.QueueCacheTTL.Duration, brokers.Options{Metrics: brokers.NewMetrics(m.registry)})
	if err != nil {
		return nil, nil, brokers.Set{}, err
	}
	hooks := &hooksync.Handler{Config: cfg, Transports: yieldingBrokers{opened}, Script: script, FlatScript: asyaruntime.EmbeddedHTTP(), Now: time.Now}
	var background []func(context.Context)
	if kube := newKubeReader(cfg, f.kubeconfig, log); kube != nil {
		hooks.Pods, hooks.Actors, hooks.Secrets = kube, kube, kube
		hooks.Claimants = hooksync.NewClaimantsCache(cfg.QueueCacheTTL.Duration)
		if cfg.Watch.Namesakes == config.Read {
			index := actorindex.New(kube.actors, kube)
			hooks.Actors = index
			background = append(background, index.Run)
		}
	}
	srv := &server{
		background: background,
		hooks:      hooks,
		log:        log,
		metrics:    m,
		maxBody:    f.maxBody,
		admit:      newAdmission(f.maxSyncs),
	}
	if f.files.authenticates() {
		srv.auth = creds
	} else {
		log.Warn().Msg("hooks accept calls from anyone: no --auth-token-file, --auth-token-dir or --client-ca-file")
	}
	return srv, creds, opened, nil
}

// run serves hooks on the hooks listener (HTTPS when creds has a
// certificate) and the open endpoints also on open, if given, reloading
// credentials as they change. When ctx ends it drains as plan says.
func (s *server) run(ctx context.Context, creds *credentials, hooks, open net.Listener, plan drainPlan) error {
	watch := &drainWatch{draining: &s.draining}
	handler := watch.handler(s.routes())
	// TLS handshake failures (a probe dropping the connection, a client
	// that distrusts the certificate) go to the service's log.
	errLog := stdlog.New(s.log.With().Str("level", "debug").Logger(), "", 0)
	servers := []*http.Server{{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog, ConnContext: watch.accepted}}
	errc := make(chan error, 2)
	if creds.files.tls() {
		servers[0].TLSConfig = creds.tlsConfig()
		go func() { errc <- servers[0].ServeTLS(hooks, "", "") }()
	} else {
		go func() { errc <- servers[0].Serve(hooks) }()
	}
	s.log.Info().Str("listen", hooks.Addr().String()).Bool("tls", creds.files.tls()).
		Bool("authenticated", creds.files.authenticates()).Msg("serving hooks")
	if open != nil {
		mux := http.NewServeMux()
		for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
			mux.Handle(path, handler)
		}
		servers = append(servers, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog})
		go func() { errc <- servers[1].Serve(open) }()
		s.log.Info().Str("listen", open.Addr().String()).Msg("serving metrics and probes")
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go creds.watch(watchCtx)
	for _, run := range s.background {
		go run(watchCtx)
	}
	select {
	case err := <-errc:
		for _, srv := range servers {
			srv.Close()
		}
		return err
	case <-ctx.Done():
	}
	watch.begin()
	if plan.delay > 0 {
		s.log.Info().Dur("drain_delay", plan.delay).Msg("draining: serving on, not ready, until the Service stops routing here")
		select {
		case <-plan.wait():
		case err := <-errc:
			for _, srv := range servers {
				srv.Close()
			}
			return err
		}
	}
	calls, last := watch.read()
	s.log.Info().Int("calls_on_new_connections", calls).Dur("last_new_connection_after", last).
		Msg("closing the listeners; waiting for the calls in flight")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), plan.timeout)
	defer cancel()
	var errs []error
	for _, srv := range servers {
		errs = append(errs, srv.Shutdown(shutdownCtx))
	}
	return errors.Join(errs...)
}
