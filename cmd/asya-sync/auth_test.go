package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/rs/zerolog"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/testenv"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	hooksync "github.com/asya-sh/asya-sync/sync"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

// replaceFile replaces path atomically, as the kubelet updates a mounted
// Secret.
func replaceFile(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// secured is a running service with every credential file in dir.
type secured struct {
	url       string
	dir       string
	files     credentialFiles
	creds     *credentials
	serverCA  testenv.TestCA
	clientCA  testenv.TestCA
	token     string
	serverPEM []byte // current server certificate
}

// startSecured runs s over TLS on loopback, requiring both a token and a
// client certificate, with credentials reloaded every 50 ms.
func startSecured(t *testing.T, s *server) *secured {
	t.Helper()
	dir := t.TempDir()
	sec := &secured{dir: dir, serverCA: testenv.NewTestCA(t, "server CA"), clientCA: testenv.NewTestCA(t, "client CA"), token: "first-token"}
	sec.files = credentialFiles{
		certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key"),
		clientCAFile: filepath.Join(dir, "client-ca.crt"), tokenDir: filepath.Join(dir, "token.d"),
	}
	sec.rotateServerCert(t)
	replaceFile(t, sec.files.clientCAFile, sec.clientCA.PEM)
	if err := os.Mkdir(sec.files.tokenDir, 0o700); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, filepath.Join(sec.files.tokenDir, "token"), []byte(sec.token+"\n"))
	creds, err := newCredentials(sec.files, s.log, s.metrics.registry)
	if err != nil {
		t.Fatal(err)
	}
	creds.interval = 50 * time.Millisecond
	sec.creds, s.auth = creds, creds
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sec.url = "https://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, creds, ln, nil, drainPlan{timeout: shutdownTimeout}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return sec
}

func (sec *secured) rotateServerCert(t *testing.T) {
	t.Helper()
	c, k := sec.serverCA.Issue("asya-sync", x509.ExtKeyUsageServerAuth)
	// Key first: a reload between the two writes sees a mismatched pair,
	// which must keep the old certificate, not break the server.
	replaceFile(t, sec.files.keyFile, k)
	replaceFile(t, sec.files.certFile, c)
	sec.serverPEM = c
}

// client calls the hooks as Metacontroller would: trusting the server CA
// (caBundle), presenting cert (clientTLS) and token (authorization).
func (sec *secured) client(cert *tls.Certificate, keepAlive bool) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(sec.serverCA.PEM)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: !keepAlive}}
}

func call(t testing.TB, c *http.Client, url, authorization, body string) (int, map[string]any, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Errorf("%s: answer is not JSON: %q", url, data)
	}
	return resp.StatusCode, out, nil
}

func TestAuthRefusals(t *testing.T) {
	s := newTestService(t, 1<<20)
	logs := &syncWriter{}
	s.log = zerolog.New(logs)
	sec := startSecured(t, s)
	good := sec.clientCA.ClientCert("metacontroller")
	stranger := testenv.NewTestCA(t, "another CA").ClientCert("metacontroller")
	serverC, serverK := sec.clientCA.Issue("not a client", x509.ExtKeyUsageServerAuth)
	serverOnly, _ := tls.X509KeyPair(serverC, serverK)
	bearer := "Bearer " + sec.token

	tests := []struct {
		name, authorization string
		cert                *tls.Certificate
		reason              string
	}{
		{"no token", "", &good, reasonNoToken},
		{"wrong token", "Bearer not-the-token", &good, reasonBadToken},
		{"token with a suffix", bearer + "x", &good, reasonBadToken},
		{"token prefix", "Bearer " + sec.token[:5], &good, reasonBadToken},
		{"basic scheme", "Basic " + sec.token, &good, reasonNoToken},
		{"scheme only", "Bearer", &good, reasonNoToken},
		{"no client certificate", bearer, nil, reasonNoClientCert},
		{"certificate of another CA", bearer, &stranger, reasonBadClientCert},
		{"server-only certificate of the right CA", bearer, &serverOnly, reasonBadClientCert},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := counterValue(t, sec.creds.refused.WithLabelValues(tt.reason))
			for _, hook := range []string{"/sync", "/finalize", "/customize"} {
				code, body, err := call(t, sec.client(tt.cert, false), sec.url+hook, tt.authorization, `{"parent":`+actorJSON+`}`)
				if err != nil {
					t.Fatal(err)
				}
				if code != http.StatusUnauthorized || !strings.Contains(body["error"].(string), strings.ReplaceAll(tt.reason, "_", " ")) {
					t.Errorf("%s: got %d %v, want 401 naming %s", hook, code, body, tt.reason)
				}
			}
			if got := counterValue(t, sec.creds.refused.WithLabelValues(tt.reason)) - before; got != 3 {
				t.Errorf("asya_sync_auth_failures_total{reason=%q} rose by %v, want 3", tt.reason, got)
			}
		})
	}

	t.Run("good call", func(t *testing.T) {
		code, body, err := call(t, sec.client(&good, false), sec.url+"/customize", "bearer "+sec.token, `{"parent":`+actorJSON+`}`)
		if err != nil || code != http.StatusOK || body["relatedResources"] == nil {
			t.Errorf("got %d %v %v, want 200 with relatedResources", code, body, err)
		}
	})
	t.Run("open endpoints need no credentials", func(t *testing.T) {
		c := sec.client(nil, false)
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			resp, err := c.Get(sec.url + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			text, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d %s", path, resp.StatusCode, text)
			}
			if path == "/metrics" && !strings.Contains(string(text), `asya_sync_auth_failures_total{reason="bad_token"} 9`) {
				t.Errorf("metrics lack the refused calls:\n%s", grepLines(string(text), "asya_sync_auth"))
			}
		}
	})
	t.Run("plain HTTP is not served", func(t *testing.T) {
		resp, err := http.Post(strings.Replace(sec.url, "https", "http", 1)+"/finalize", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("plain HTTP got %d, want the TLS server's 400", resp.StatusCode)
			}
		}
	})
	if strings.Contains(logs.String(), sec.token) || strings.Contains(logs.String(), "not-the-token") {
		t.Errorf("a presented token reached the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"peer":"127.0.0.1:`) {
		t.Errorf("refusals are not logged with the peer address:\n%s", logs.String())
	}
}

// TestRotationUnderLoad rotates the server certificate, the token and the
// client CA on disk while calls stream in, each on a new connection: no
// call may fail, and the new credentials must take effect.
func TestRotationUnderLoad(t *testing.T) {
	s := newTestService(t, 1<<20)
	sec := startSecured(t, s)
	clientCert := sec.clientCA.ClientCert("metacontroller")
	var current struct {
		sync.Mutex
		cert  tls.Certificate
		token string
	}
	current.cert, current.token = clientCert, sec.token
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(sec.serverCA.PEM)
	var seenSerials sync.Map
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
		RootCAs: roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			current.Lock()
			defer current.Unlock()
			c := current.cert
			return &c, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			seenSerials.Store(cs.PeerCertificates[0].SerialNumber.String(), true)
			return nil
		},
	}}}

	stop := make(chan struct{})
	var calls, failures atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				current.Lock()
				token := current.token
				current.Unlock()
				code, _, err := call(t, client, sec.url+"/customize", "Bearer "+token, `{"parent":`+actorJSON+`}`)
				calls.Add(1)
				if err != nil || code != http.StatusOK {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, [2]any{code, err})
				}
			}
		}()
	}
	settle := func() { time.Sleep(300 * time.Millisecond) } // several reload periods

	settle()
	// Server certificate: a new one on disk is served without a restart.
	sec.rotateServerCert(t)
	settle()
	block, _ := pem.Decode(sec.serverPEM)
	newLeaf, _ := x509.ParseCertificate(block.Bytes)
	if _, ok := seenSerials.Load(newLeaf.SerialNumber.String()); !ok {
		t.Errorf("the rotated server certificate was not served")
	}

	// Token: a second key of the Secret holds the new one while callers
	// switch; then the old key goes. Calls are counted by the key they used.
	replaceFile(t, filepath.Join(sec.files.tokenDir, "token-2"), []byte("second-token\n"))
	settle()
	current.Lock()
	current.token = "second-token"
	current.Unlock()
	settle()
	if err := os.Remove(filepath.Join(sec.files.tokenDir, "token")); err != nil {
		t.Fatal(err)
	}
	settle()
	if counterValue(t, sec.creds.accepted.WithLabelValues("token")) == 0 || counterValue(t, sec.creds.accepted.WithLabelValues("token-2")) == 0 {
		t.Errorf("accepted calls by key: token %v, token-2 %v; want both counted",
			counterValue(t, sec.creds.accepted.WithLabelValues("token")), counterValue(t, sec.creds.accepted.WithLabelValues("token-2")))
	}

	// Client CA: a bundle of old and new while the caller switches.
	newClientCA := testenv.NewTestCA(t, "client CA 2")
	replaceFile(t, sec.files.clientCAFile, append(append([]byte{}, sec.clientCA.PEM...), newClientCA.PEM...))
	settle()
	current.Lock()
	current.cert = newClientCA.ClientCert("metacontroller")
	current.Unlock()
	settle()
	replaceFile(t, sec.files.clientCAFile, newClientCA.PEM)
	settle()

	close(stop)
	wg.Wait()
	t.Logf("%d calls during rotation, %d failed", calls.Load(), failures.Load())
	if failures.Load() != 0 {
		t.Errorf("%d of %d calls failed during rotation; first: %v", failures.Load(), calls.Load(), firstFailure.Load())
	}
	if calls.Load() < 20 {
		t.Errorf("only %d calls streamed during rotation", calls.Load())
	}

	// The retired credentials no longer work.
	code, _, _ := call(t, sec.client(&current.cert, false), sec.url+"/customize", "Bearer first-token", `{"parent":`+actorJSON+`}`)
	if code != http.StatusUnauthorized {
		t.Errorf("retired token: got %d, want 401", code)
	}
	code, _, _ = call(t, sec.client(&clientCert, false), sec.url+"/customize", "Bearer second-token", `{"parent":`+actorJSON+`}`)
	if code != http.StatusUnauthorized {
		t.Errorf("certificate of the retired client CA: got %d, want 401", code)
	}
}

// TestBadCredentialFilesKeepTheLastGood breaks each file on disk: calls go
// on with the last good content, and each failure is counted once.
func TestBadCredentialFilesKeepTheLastGood(t *testing.T) {
	s := newTestService(t, 1<<20)
	sec := startSecured(t, s)
	good := sec.clientCA.ClientCert("metacontroller")
	ok := func(step string) {
		t.Helper()
		code, body, err := call(t, sec.client(&good, false), sec.url+"/customize", "Bearer "+sec.token, `{"parent":`+actorJSON+`}`)
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: got %d %v %v, want 200", step, code, body, err)
		}
	}
	for _, tt := range []struct {
		label, path string
		bad         []byte
	}{
		{"auth-token", filepath.Join(sec.files.tokenDir, "token"), []byte("  \n")},
		// Old and new token on two lines, as Metacontroller would send them
		// in one header: refused, the last good token stays.
		{"auth-token", filepath.Join(sec.files.tokenDir, "token"), []byte(sec.token + "\nsecond-token\n")},
		{"client-ca", sec.files.clientCAFile, []byte("not PEM")},
		{"tls-cert", sec.files.certFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
		{"tls-cert", sec.files.keyFile, nil}, // removed
	} {
		before := counterValue(t, sec.creds.reloadFailure.WithLabelValues(tt.label))
		saved, err := os.ReadFile(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if tt.bad == nil {
			os.Remove(tt.path)
		} else {
			replaceFile(t, tt.path, tt.bad)
		}
		time.Sleep(300 * time.Millisecond)
		ok(tt.label + " broken")
		if got := counterValue(t, sec.creds.reloadFailure.WithLabelValues(tt.label)) - before; got != 1 {
			t.Errorf("%s broken: asya_sync_credential_reload_failures_total{file=%q} rose by %v, want 1", tt.path, tt.label, got)
		}
		replaceFile(t, tt.path, saved)
		time.Sleep(200 * time.Millisecond)
		ok(tt.label + " restored")
	}
}

func TestCredentialFlagsAtStartup(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	replaceFile(t, empty, nil)
	twoLines := filepath.Join(dir, "two-lines")
	replaceFile(t, twoLines, []byte("old\nnew\n"))
	emptyDir := filepath.Join(dir, "empty.d")
	if err := os.Mkdir(emptyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, filepath.Join(emptyDir, "..data"), nil) // the kubelet's entries are not tokens
	for _, tt := range []struct {
		name  string
		files credentialFiles
		want  string
	}{
		{"cert without key", credentialFiles{certFile: empty}, "go together"},
		{"client CA without TLS", credentialFiles{clientCAFile: empty}, "needs --tls-cert-file"},
		{"missing token file", credentialFiles{tokenFile: filepath.Join(dir, "nope")}, "no such file"},
		{"empty token file", credentialFiles{tokenFile: empty}, "empty"},
		{"two tokens in one file", credentialFiles{tokenFile: twoLines}, "more than one line"},
		{"empty token directory", credentialFiles{tokenDir: emptyDir}, "no token file"},
		{"missing token directory", credentialFiles{tokenDir: filepath.Join(dir, "nodir")}, "no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newCredentials(tt.files, zerolog.Nop(), newMetrics().registry)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// syncWriter is a log sink the server and the test share.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestRefusedFinalizeLeavesTheQueue runs the service with a real RabbitMQ
// behind it: finalize calls that fail authentication get 401 and the
// actor's queue keeps its message; the authenticated call deletes it.
func TestRefusedFinalizeLeavesTheQueue(t *testing.T) {
	conn := testenv.Rabbit(t)
	// No API server here: the actor is its queue's only claimant.
	cfg, err := config.Parse([]byte(`
watch: {namesakes: false}
transports:
  rabbitmq: {type: rabbitmq, config: {host: 127.0.0.1, exchange: asya-auth-test}}
`))
	if err != nil {
		t.Fatal(err)
	}
	opened, err := brokers.Open(cfg.Enabled(), cfg.QueueCacheTTL.Duration, brokers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Close() })
	s := newTestService(t, 1<<20)
	s.hooks = &hooksync.Handler{Config: cfg, Transports: opened, Script: asyaruntime.Embedded(), Now: time.Now}
	sec := startSecured(t, s)

	actor := testenv.UniqueName("auth")
	queue := "asya-" + actor
	t.Cleanup(func() {
		if testenv.QueueExists(t, conn, queue) {
			testenv.DeleteQueue(t, conn, queue)
		}
	})
	parent := strings.NewReplacer(`"name":"echo"`, `"name":"`+actor+`"`).Replace(actorJSON)
	good := sec.clientCA.ClientCert("metacontroller")
	code, body, err := call(t, sec.client(&good, false), sec.url+"/sync", "Bearer "+sec.token, `{"parent":`+parent+`,"children":{}}`)
	if err != nil || code != http.StatusOK {
		t.Fatalf("sync: %d %v %v", code, body, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.PublishWithContext(context.Background(), "", queue, true, false, amqp.Publishing{Body: []byte("work")}); err != nil {
		t.Fatal(err)
	}
	messages := func() int {
		t.Helper()
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			t.Fatalf("queue %s: %v", queue, err)
		}
		return q.Messages
	}
	waitFor(t, func() bool { return messages() == 1 })

	deleting := strings.Replace(parent, `"namespace":"ml"`, `"namespace":"ml","deletionTimestamp":"2026-01-01T00:00:00Z"`, 1)
	finalizeBody := `{"parent":` + deleting + `,"children":{},"finalizing":true}`
	stranger := testenv.NewTestCA(t, "another CA").ClientCert("metacontroller")
	for _, tt := range []struct {
		name, authorization string
		cert                *tls.Certificate
	}{
		{"no token", "", &good},
		{"wrong token", "Bearer guess", &good},
		{"no client certificate", "Bearer " + sec.token, nil},
		{"client certificate of another CA", "Bearer " + sec.token, &stranger},
	} {
		for _, hook := range []string{"/finalize", "/sync"} {
			code, body, err := call(t, sec.client(tt.cert, false), sec.url+hook, tt.authorization, finalizeBody)
			if err != nil || code != http.StatusUnauthorized {
				t.Errorf("%s %s: got %d %v %v, want 401", tt.name, hook, code, body, err)
			}
		}
		if n := messages(); n != 1 {
			t.Fatalf("after a refused finalize (%s) the queue holds %d messages, want 1", tt.name, n)
		}
	}

	code, body, err = call(t, sec.client(&good, false), sec.url+"/finalize", "Bearer "+sec.token, finalizeBody)
	if err != nil || code != http.StatusOK || body["finalized"] != true {
		t.Fatalf("authenticated finalize: %d %v %v, want 200 finalized", code, body, err)
	}
	if testenv.QueueExists(t, conn, queue) {
		t.Errorf("queue %s survived the authenticated finalize", queue)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
	}
}
