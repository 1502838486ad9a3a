package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// credentialFiles names the files that secure the hooks; an empty name
// turns that part off.
type credentialFiles struct {
	certFile, keyFile string // serve HTTPS
	clientCAFile      string // require a client certificate signed by this CA
	tokenFile         string // require Authorization: Bearer <token>
	tokenDir          string // or any token of this directory, one a file
}

func (f credentialFiles) token() bool { return f.tokenFile != "" || f.tokenDir != "" }

func (f credentialFiles) tls() bool { return f.certFile != "" || f.keyFile != "" }

// authenticates reports whether hook calls must prove who they are.
func (f credentialFiles) authenticates() bool { return f.clientCAFile != "" || f.token() }

// reloadInterval is how often the credential files are read again: a
// rotated certificate or token takes effect within it.
const reloadInterval = 10 * time.Second

// credentials holds the last good content of every credential file and
// checks hook calls against it. Files are polled rather than watched:
// Kubernetes updates mounted Secrets by swapping a symlink, which a poll
// sees the same way as an edit in place.
type credentials struct {
	files    credentialFiles
	log      zerolog.Logger
	interval time.Duration // between reloads

	cert      atomic.Pointer[tls.Certificate]
	clientCAs atomic.Pointer[x509.CertPool]
	tokens    atomic.Pointer[[]acceptedToken]

	seen       map[string][sha256.Size]byte // content last tried, by file label
	unreadable map[string]bool              // failure already counted

	refused       *prometheus.CounterVec
	accepted      *prometheus.CounterVec
	reloadFailure *prometheus.CounterVec
}

// acceptedToken is one token the hooks accept: its hash (compared in
// constant time and length) and the file, that is the Secret key, it came
// from, which the accepted calls are counted by.
type acceptedToken struct {
	sum [sha256.Size]byte
	key string
}

// Refusal reasons, the values of asya_sync_auth_failures_total's label.
const (
	reasonNoClientCert  = "no_client_certificate"
	reasonBadClientCert = "bad_client_certificate"
	reasonNoToken       = "no_token"
	reasonBadToken      = "bad_token"
)

// newCredentials loads every file once; any problem at startup is an error.
func newCredentials(files credentialFiles, log zerolog.Logger, reg prometheus.Registerer) (*credentials, error) {
	if files.tls() && (files.certFile == "" || files.keyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if files.clientCAFile != "" && !files.tls() {
		return nil, errors.New("--client-ca-file needs --tls-cert-file and --tls-key-file")
	}
	c := &credentials{
		files: files, log: log, interval: reloadInterval, seen: map[string][sha256.Size]byte{}, unreadable: map[string]bool{},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "asya_sync_auth_failures_total", Help: "Hook calls refused with 401, by reason.",
		}, []string{"reason"}),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "asya_sync_auth_token_accepted_total",
			Help: "Hook calls accepted, by the token file (the Secret key) whose token they presented: during a rotation, says when no caller uses the old one.",
		}, []string{"key"}),
		reloadFailure: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "asya_sync_credential_reload_failures_total",
			Help: "Credential files that turned unreadable or invalid; the last good content stays in use.",
		}, []string{"file"}),
	}
	reg.MustRegister(c.refused, c.accepted, c.reloadFailure)
	for _, reason := range []string{reasonNoClientCert, reasonBadClientCert, reasonNoToken, reasonBadToken} {
		c.refused.WithLabelValues(reason)
	}
	for _, l := range c.loaders() {
		c.reloadFailure.WithLabelValues(l.label)
		if _, err := c.load(l); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// loader reads and installs one credential.
type loader struct {
	label string
	read  func() ([]source, error)
	apply func(sources []source) error
}

// source is one file's content, by name.
type source struct {
	name string
	data []byte
}

func (c *credentials) loaders() []loader {
	var out []loader
	if c.files.tls() {
		out = append(out, loader{"tls-cert", readFiles(c.files.certFile, c.files.keyFile), func(s []source) error {
			cert, err := tls.X509KeyPair(s[0].data, s[1].data)
			if err != nil {
				return err
			}
			c.cert.Store(&cert)
			return nil
		}})
	}
	if c.files.clientCAFile != "" {
		out = append(out, loader{"client-ca", readFiles(c.files.clientCAFile), func(s []source) error {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(s[0].data) {
				return errors.New("no PEM certificate in the file")
			}
			c.clientCAs.Store(pool)
			return nil
		}})
	}
	if c.files.token() {
		out = append(out, loader{"auth-token", c.readTokens, c.applyTokens})
	}
	return out
}

// readFiles reads paths, in order.
func readFiles(paths ...string) func() ([]source, error) {
	return func() ([]source, error) {
		out := make([]source, len(paths))
		for i, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			out[i] = source{p, data}
		}
		return out, nil
	}
}

// readTokens reads the token file and every file of the token directory,
// where a mounted Secret puts each key (the kubelet's own entries start
// with a dot). Each file holds one token, named by its file.
func (c *credentials) readTokens() ([]source, error) {
	var out []source
	if c.files.tokenFile != "" {
		data, err := os.ReadFile(c.files.tokenFile)
		if err != nil {
			return nil, err
		}
		out = append(out, source{filepath.Base(c.files.tokenFile), data})
	}
	if dir := c.files.tokenDir; dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		n := len(out)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			out = append(out, source{e.Name(), data})
		}
		if len(out) == n {
			return nil, fmt.Errorf("no token file in %s", dir)
		}
	}
	return out, nil
}

// applyTokens accepts one token a file. A file of several lines is
// refused: Metacontroller sends the whole value of its Secret key as the
// header, and a newline there fails every call before it leaves
// Metacontroller, so a rotation lists tokens under separate keys.
func (c *credentials) applyTokens(sources []source) error {
	tokens := make([]acceptedToken, 0, len(sources))
	for _, s := range sources {
		token := bytes.TrimSpace(s.data)
		switch {
		case len(token) == 0:
			return fmt.Errorf("%s is empty", s.name)
		case bytes.ContainsAny(token, "\r\n"):
			return fmt.Errorf("%s holds more than one line: Metacontroller would send it whole, newline included, "+
				"which fails every call; give each token a Secret key of its own", s.name)
		}
		tokens = append(tokens, acceptedToken{sha256.Sum256(token), s.name})
	}
	c.tokens.Store(&tokens)
	for _, t := range tokens {
		c.accepted.WithLabelValues(t.key)
	}
	return nil
}

// load reads l's files and installs them when their content changed since
// the last attempt. changed is false when the files could not be read.
func (c *credentials) load(l loader) (changed bool, err error) {
	sources, err := l.read()
	if err != nil {
		return false, fmt.Errorf("%s: %w", l.label, err)
	}
	h := sha256.New()
	var names []string
	for _, s := range sources {
		h.Write([]byte(s.name))
		h.Write([]byte{0})
		h.Write(s.data)
		h.Write([]byte{0})
		names = append(names, s.name)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	if prev, ok := c.seen[l.label]; ok && prev == sum {
		return false, nil
	}
	c.seen[l.label] = sum
	if err := l.apply(sources); err != nil {
		return true, fmt.Errorf("%s %s: %w", l.label, strings.Join(names, ", "), err)
	}
	return true, nil
}

// reload reads every file again, keeping the last good content of any
// that fails. Each failure is counted once: a new bad content, or a file
// turning unreadable.
func (c *credentials) reload() {
	for _, l := range c.loaders() {
		changed, err := c.load(l)
		switch {
		case err != nil && !changed:
			if !c.unreadable[l.label] {
				c.unreadable[l.label] = true
				c.reloadFailed(l.label, err)
			}
			continue
		case err != nil:
			c.reloadFailed(l.label, err)
		case changed:
			c.log.Info().Str("file", l.label).Msg("credential reloaded")
		}
		c.unreadable[l.label] = false
	}
}

func (c *credentials) reloadFailed(label string, err error) {
	c.reloadFailure.WithLabelValues(label).Inc()
	c.log.Error().Err(err).Str("file", label).Msg("credential reload failed; keeping the last good one")
}

// watch reloads every interval until ctx ends.
func (c *credentials) watch(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.reload()
		}
	}
}

// tlsConfig serves the current certificate. A client certificate is
// requested but checked per hook call (require), so that probes and
// scrapers without one still reach the open endpoints, and a refused hook
// call gets a 401 rather than a failed handshake.
func (c *credentials) tlsConfig() *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cert.Load(), nil
		},
	}
	if c.files.clientCAFile != "" {
		cfg.ClientAuth = tls.RequestClientCert
	}
	return cfg
}

// require refuses, with 401 and before the body is read, a hook call that
// lacks a valid client certificate or token.
func (c *credentials) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := c.refusal(r); reason != "" {
			c.refused.WithLabelValues(reason).Inc()
			// The peer, never the credential presented.
			c.log.Warn().Str("peer", r.RemoteAddr).Str("path", r.URL.Path).Str("reason", reason).Msg("hook call refused")
			if c.files.token() {
				w.Header().Set("WWW-Authenticate", `Bearer realm="asya-sync"`)
			}
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized: " + strings.ReplaceAll(reason, "_", " ")})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (c *credentials) refusal(r *http.Request) string {
	if c.files.clientCAFile != "" {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return reasonNoClientCert
		}
		if !c.verifyClient(r.TLS.PeerCertificates) {
			return reasonBadClientCert
		}
	}
	if c.files.token() {
		presented, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			return reasonNoToken
		}
		key, ok := c.tokenKey(presented)
		if !ok {
			return reasonBadToken
		}
		c.accepted.WithLabelValues(key).Inc()
	}
	return ""
}

// tokenKey compares the presented token's hash with every accepted one, in
// time independent of where (or whether) it matches, and names the file
// of the match.
func (c *credentials) tokenKey(presented string) (string, bool) {
	sum := sha256.Sum256([]byte(presented))
	tokens := *c.tokens.Load()
	match, at := 0, 0
	for i, want := range tokens {
		eq := subtle.ConstantTimeCompare(sum[:], want.sum[:])
		at = subtle.ConstantTimeSelect(eq, i, at)
		match |= eq
	}
	if match != 1 {
		return "", false
	}
	return tokens[at].key, true
}

func (c *credentials) verifyClient(chain []*x509.Certificate) bool {
	inter := x509.NewCertPool()
	for _, cert := range chain[1:] {
		inter.AddCert(cert)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		Roots: c.clientCAs.Load(), Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return err == nil
}

// bearerToken reads "Bearer <token>" (the scheme in any case).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}
