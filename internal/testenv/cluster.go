//go:build e2e

package testenv

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is a child process whose output goes to a log file, stopped with
// SIGTERM (then SIGKILL) at the end of the run.
type Process struct {
	name string
	cmd  *exec.Cmd
	Log  string
	done chan struct{}
	err  error
}

// StartProcess starts bin with args in its own process group, its output in
// logDir/name.log.
func StartProcess(name, logDir string, env []string, bin string, args ...string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	// Own process group, so that nothing it spawns outlives the run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// CPU is the process's user and system time so far, in seconds.
func (p *Process) CPU() float64 { return pidCPU(p.cmd.Process.Pid) }

// APIServerCPU is the API server's CPU time so far, in seconds: where the
// lists asya-sync makes itself are paid.
func (e *Env) APIServerCPU() float64 { return e.Cluster.apiserver.CPU() }

func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM and waits up to grace before killing the group.
func (p *Process) Stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Tail returns the end of the process log, for failure messages.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePorts reserves n distinct loopback ports. They are released before
// the caller binds them, which is racy only against other processes doing
// the same at the same moment.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// WaitFor polls check until it returns nil, the process dies, or timeout.
func WaitFor(what string, timeout time.Duration, p *Process, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			return fmt.Errorf("%s: %s exited (%v); log:\n%s", what, p.name, p.err, p.Tail(40))
		}
		if last = check(); last == nil {
			return nil
		}
		time.Sleep(150 * time.Millisecond)
	}
	msg := fmt.Sprintf("%s: not ready after %s: %v", what, timeout, last)
	if p != nil {
		msg += "\nlog:\n" + p.Tail(40)
	}
	return errors.New(msg)
}

// pki holds a throwaway CA and the API server's serving certificate.
type pki struct {
	caPEM, certFile, keyFile, saKeyFile, saPubFile string
	pool                                           *x509.CertPool
	caCert                                         *x509.Certificate
	caKey                                          *ecdsa.PrivateKey
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func newPKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "asya-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	// Service account tokens are signed with RSA.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p := &pki{
		caPEM:     filepath.Join(dir, "ca.crt"),
		certFile:  filepath.Join(dir, "apiserver.crt"),
		keyFile:   filepath.Join(dir, "apiserver.key"),
		saKeyFile: filepath.Join(dir, "sa.key"),
		saPubFile: filepath.Join(dir, "sa.pub"),
		pool:      x509.NewCertPool(),
		caCert:    caCert,
		caKey:     caKey,
	}
	p.pool.AddCert(caCert)
	for _, w := range []struct {
		path, typ string
		der       []byte
	}{
		{p.caPEM, "CERTIFICATE", caDER},
		{p.saKeyFile, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)},
		{p.saPubFile, "PUBLIC KEY", saPub},
	} {
		if err := writePEM(w.path, w.typ, w.der); err != nil {
			return nil, err
		}
	}
	err = p.issue(p.certFile, p.keyFile, "kube-apiserver", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
	return p, err
}

// issue writes a certificate for 127.0.0.1 (and 10.0.0.1, the API
// server's service address) and the DNS names, signed by the CA, for
// serving and as a client.
func (p *pki) issue(certFile, keyFile, commonName string, dnsNames ...string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     dnsNames,
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1"), net.ParseIP(NodeIP)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(keyFile, "PRIVATE KEY", keyDER)
}

// serviceCIDR is the range of the Services' cluster IPs.
const serviceCIDR = "10.0.0.0/24"

// cluster is etcd plus kube-apiserver on loopback and, once startGC has
// run, kube-controller-manager with its garbage collector only: no
// scheduler, no other controller, no kubelet. Objects are stored and
// validated, and an object whose owners are gone is deleted; nothing else
// acts on them unless a test does.
type cluster struct {
	dir        string
	pki        *pki
	etcd       *Process
	apiserver  *Process
	gc         *Process
	url        string
	token      string
	Kubeconfig string
	Client     *Kube
}

// advertiseAddress is where the kubernetes Service sends pods: the node's
// address when there is a node, else loopback.
func advertiseAddress() string {
	if nodeWanted() {
		return NodeIP
	}
	return "127.0.0.1"
}

// APIPort is the port the API server listens on, on loopback.
func (c *cluster) APIPort() string {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(c.url, "https://"))
	return port
}

func startCluster(ctx context.Context, bin, dir string) (*cluster, error) {
	c := &cluster{dir: dir}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	c.etcd, err = StartProcess("etcd", dir, nil, filepath.Join(bin, "etcd"),
		"--name=e2e",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL,
		"--listen-metrics-urls=",
		"--log-level=warn",
		// A throwaway store: durability buys nothing and costs seconds.
		"--unsafe-no-fsync",
		"--quota-backend-bytes=1073741824",
	)
	if err != nil {
		return nil, err
	}
	if err := WaitFor("etcd", 30*time.Second, c.etcd, HTTPOK(etcdURL+"/health")); err != nil {
		c.Stop()
		return nil, err
	}

	p, err := newPKI(dir)
	if err != nil {
		c.Stop()
		return nil, err
	}
	c.pki = p
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	c.token = hex.EncodeToString(tok)
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(c.token+",e2e-admin,e2e-admin,system:masters\n"), 0o600); err != nil {
		c.Stop()
		return nil, err
	}
	// The aggregation layer's client certificate (front proxy).
	proxyCert, proxyKey := filepath.Join(dir, "front-proxy-client.crt"), filepath.Join(dir, "front-proxy-client.key")
	if err := p.issue(proxyCert, proxyKey, "front-proxy-client"); err != nil {
		c.Stop()
		return nil, err
	}
	c.url = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		// The kubernetes Service's endpoint: the node's address in the node
		// tier, where a relay reaches this port on loopback, so that a
		// pod's in-cluster client reaches the API server through the
		// Service as in a cluster.
		"--advertise-address=" + advertiseAddress(),
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--tls-cert-file=" + p.certFile,
		"--tls-private-key-file=" + p.keyFile,
		"--client-ca-file=" + p.caPEM,
		"--token-auth-file=" + tokenFile,
		// RBAC, as in a cluster: the test token is system:masters, and a
		// pod's ServiceAccount has what the chart grants it.
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p.saPubFile,
		"--service-account-signing-key-file=" + p.saKeyFile,
		"--api-audiences=https://kubernetes.default.svc",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--cert-dir=" + filepath.Join(dir, "certs"),
		// The aggregation layer, as a cluster has it; endpoint routing, as
		// there is no kube-proxy to reach a Service's address.
		"--requestheader-client-ca-file=" + p.caPEM,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + proxyCert,
		"--proxy-client-key-file=" + proxyKey,
		"--enable-aggregator-routing=true",
		"--v=1",
	}
	if !nodeWanted() {
		// The API-level tests' pods have no "default" ServiceAccount to
		// point at: nothing runs the service account controller. The node
		// tier runs it, and its pods get their tokens as in a cluster.
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	c.apiserver, err = StartProcess("kube-apiserver", dir, nil, filepath.Join(bin, "kube-apiserver"), args...)
	if err != nil {
		c.Stop()
		return nil, err
	}
	c.Client = newKube(c.url, c.token, &tls.Config{RootCAs: p.pool})
	if err := WaitFor("kube-apiserver", 90*time.Second, c.apiserver, func() error {
		body, status, err := c.Client.Raw(ctx, "GET", "/readyz", nil, "")
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("readyz %d: %s", status, FirstLine(body))
		}
		// The default namespace is created by a post-start hook shortly after
		// readyz; wait for it too.
		if _, status, err = c.Client.Raw(ctx, "GET", "/api/v1/namespaces/default", nil, ""); err != nil || status != 200 {
			return fmt.Errorf("namespace default not there yet (%d, %v)", status, err)
		}
		return nil
	}); err != nil {
		c.Stop()
		return nil, err
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: e2e-admin
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: e2e-admin, namespace: default}
current-context: e2e
`, c.url, p.caPEM, c.token)
	if err := os.WriteFile(c.Kubeconfig, []byte(kc), 0o600); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// startGC runs kube-controller-manager with the controllers named (only its
// garbage collector for the API-level tests, the workload controllers too
// for the node tier). The garbage collector deletes an object once every
// owner in its ownerReferences is gone, as in any cluster. It finds the resources to watch through discovery when
// it starts and every 30 s after, so it is started once the CRDs are
// served. It is ready once it has collected a ConfigMap whose owner was
// deleted.
func (c *cluster) startGC(ctx context.Context, bin, controllers string) error {
	var err error
	c.gc, err = StartProcess("kube-controller-manager", c.dir, nil, filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+c.Kubeconfig,
		"--controllers="+controllers,
		// The CA the pods' ServiceAccount tokens come with (each
		// namespace's kube-root-ca.crt): the kubeconfig names its CA as a
		// file, which the publisher does not read.
		"--root-ca-file="+c.pki.caPEM,
		"--horizontal-pod-autoscaler-sync-period=5s",
		// The test token for everything: no service accounts here.
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		// No serving: nothing reads its health or metrics, and without a
		// port it asks the API server for no authentication config.
		"--secure-port=0",
		"--v=1",
	)
	if err != nil {
		return err
	}
	cm, err := c.Client.ByKind(ctx, "v1", "ConfigMap")
	if err != nil {
		return err
	}
	owner, err := c.Client.Create(ctx, Obj{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": Obj{"generateName": "gc-probe-owner-", "namespace": "default"}}, false)
	if err != nil {
		return fmt.Errorf("garbage collector probe: %w", err)
	}
	dependent, err := c.Client.Create(ctx, Obj{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": Obj{"generateName": "gc-probe-dependent-", "namespace": "default",
			"ownerReferences": []any{Obj{"apiVersion": "v1", "kind": "ConfigMap",
				"name": Str(owner, "metadata", "name"), "uid": Str(owner, "metadata", "uid")}}}}, false)
	if err != nil {
		return fmt.Errorf("garbage collector probe: %w", err)
	}
	if err := c.Client.Delete(ctx, cm, "default", Str(owner, "metadata", "name")); err != nil {
		return fmt.Errorf("garbage collector probe: %w", err)
	}
	return WaitFor("garbage collector", 2*time.Minute, c.gc, func() error {
		_, err := c.Client.Get(ctx, cm, "default", Str(dependent, "metadata", "name"))
		if IsStatus(err, 404) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("ConfigMap %s still there, its owner deleted", Str(dependent, "metadata", "name"))
	})
}

func (c *cluster) Stop() {
	if c.gc != nil {
		c.gc.Stop(10 * time.Second)
	}
	if c.apiserver != nil {
		c.apiserver.Stop(15 * time.Second)
	}
	if c.etcd != nil {
		c.etcd.Stop(10 * time.Second)
	}
}

// FirstLine is b's first line, trimmed and cut at 300 bytes, for messages.
func FirstLine(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// HTTPOK is a readiness check: GET url answers 200.
func HTTPOK(url string) func() error {
	return func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// WaitUntilEvery checks cond every period until it holds.
func WaitUntilEvery(ctx context.Context, timeout, every time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not reached in %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
	return nil
}
