//go:build e2e

package testenv

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// SecretMounts plays the kubelet's part for the Secret volumes of a
// Deployment's pod template, for a service the test runs as a process: it
// writes each volume into a directory of its own the way the kubelet's
// atomic writer does (a timestamped directory holding the files, the
// symlink ..data to it, and one symlink per key through ..data, swapped in
// one rename when the Secret changes), and with run it updates them
// periodically, as the kubelet's sync does, a while after the Secret
// changed.
type SecretMounts struct {
	kube    *Kube
	ns      string
	root    string
	volumes []secretVolume
}

type secretVolume struct {
	name, secret string
	items        map[string]string // key to path; nil: every key, as a file of its name
	mountPath    string            // in the container
	dir          string            // here
	written      string            // the content last written, to skip unchanged Secrets
}

// MountSecrets reads the Secret volumes of d's pod template and the mounts
// of its first container, and writes them under root once.
func MountSecrets(ctx context.Context, k *Kube, d Obj, root string) (*SecretMounts, error) {
	m := &SecretMounts{kube: k, ns: Str(d, "metadata", "namespace"), root: root}
	pod := MapAt(d, "spec", "template", "spec")
	containers, _ := pod["containers"].([]any)
	if len(containers) == 0 {
		return nil, fmt.Errorf("Deployment %s has no container", Str(d, "metadata", "name"))
	}
	mountPaths := map[string]string{}
	mounts, _ := containers[0].(Obj)["volumeMounts"].([]any)
	for _, vm := range mounts {
		mountPaths[Str(vm.(Obj), "name")] = Str(vm.(Obj), "mountPath")
	}
	vols, _ := pod["volumes"].([]any)
	for _, v := range vols {
		sec := MapAt(v.(Obj), "secret")
		if sec == nil {
			continue
		}
		sv := secretVolume{name: Str(v.(Obj), "name"), secret: Str(sec, "secretName"), mountPath: mountPaths[Str(v.(Obj), "name")]}
		sv.dir = filepath.Join(root, sv.name)
		if items, ok := sec["items"].([]any); ok {
			sv.items = map[string]string{}
			for _, it := range items {
				sv.items[Str(it.(Obj), "key")] = Str(it.(Obj), "path")
			}
		}
		if err := os.MkdirAll(sv.dir, 0o700); err != nil {
			return nil, err
		}
		m.volumes = append(m.volumes, sv)
	}
	return m, m.sync(ctx)
}

// sync writes every volume whose Secret changed since the last write.
func (m *SecretMounts) sync(ctx context.Context) error {
	r := GVR{APIVersion: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	for i := range m.volumes {
		v := &m.volumes[i]
		s, err := m.kube.Get(ctx, r, m.ns, v.secret)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.name, err)
		}
		files := map[string][]byte{}
		for key, enc := range MapAt(s, "data") {
			path := key
			if v.items != nil {
				if path = v.items[key]; path == "" {
					continue
				}
			}
			if files[path], err = base64.StdEncoding.DecodeString(enc.(string)); err != nil {
				return err
			}
		}
		for key := range v.items {
			if _, ok := MapAt(s, "data")[key]; !ok {
				return fmt.Errorf("volume %s: Secret %s has no key %q", v.name, v.secret, key)
			}
		}
		if content := MustJSON(files); content != v.written {
			if err := atomicWrite(v.dir, files); err != nil {
				return fmt.Errorf("volume %s: %w", v.name, err)
			}
			v.written = content
		}
	}
	return nil
}

// Run syncs every period until ctx ends; errors are retried next period,
// as the kubelet does.
func (m *SecretMounts) Run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = m.sync(ctx)
		}
	}
}

// localPath is where the file the container sees at p is here.
func (m *SecretMounts) localPath(p string) (string, bool) {
	for _, v := range m.volumes {
		if v.mountPath != "" && (p == v.mountPath || strings.HasPrefix(p, v.mountPath+"/")) {
			return filepath.Join(v.dir, strings.TrimPrefix(p, v.mountPath)), true
		}
	}
	return "", false
}

// atomicWrite replaces the files of dir in one step, as the kubelet's
// atomic writer does: the new files in a fresh directory, ..data switched
// to it by a rename, a symlink per file through ..data.
func atomicWrite(dir string, files map[string][]byte) error {
	ts, err := os.MkdirTemp(dir, "..ts-")
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(ts, name), data, 0o400); err != nil {
			return err
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; !keep && !strings.HasPrefix(e.Name(), ".") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// CredentialArgs are the credential flags of d's first container, each path
// replaced by where m mounts it here, so that the service runs exactly as
// the chart configures it.
func (m *SecretMounts) CredentialArgs(d Obj) ([]string, error) {
	containers, _ := Field(d, "spec", "template", "spec", "containers").([]any)
	if len(containers) == 0 {
		return nil, fmt.Errorf("Deployment %s has no container", Str(d, "metadata", "name"))
	}
	raw, _ := containers[0].(Obj)["args"].([]any)
	credential := map[string]bool{"--tls-cert-file": true, "--tls-key-file": true, "--auth-token-file": true,
		"--auth-token-dir": true, "--client-ca-file": true}
	var out []string
	for i := 0; i+1 < len(raw); i++ {
		flag := fmt.Sprint(raw[i])
		if !credential[flag] {
			continue
		}
		local, ok := m.localPath(fmt.Sprint(raw[i+1]))
		if !ok {
			return nil, fmt.Errorf("%s %v is in no Secret volume", flag, raw[i+1])
		}
		out = append(out, flag, local)
	}
	return out, nil
}

// secureRelease is the chart's secure default, installed next to the plain
// manifests under its own CompositeController, which the driver follows.
const secureRelease = "asya-sync-e2e"

// installSecure installs the chart's secure default (HTTPS, the generated
// Bearer token) plus mutual TLS, with certificates the test makes (no
// cert-manager here) for the service running on loopback; writes the
// Secrets to files as the kubelet would mount them; starts the service with
// the chart's credential flags; and builds the driver from the stored
// CompositeController.
func (e *Env) installSecure(ctx context.Context) error {
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	serverCA, err := NewCA("asya-sync e2e server CA")
	if err != nil {
		return err
	}
	clientCA, err := NewCA("asya-sync e2e client CA")
	if err != nil {
		return err
	}
	serverCrt, serverKey, err := serverCA.Issue("asya-sync", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return err
	}
	clientCrt, clientKey, err := clientCA.Issue("metacontroller", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	const ns = "asya-system"
	k := e.Cluster.Client
	for _, s := range []Obj{
		Secret(ns, "e2e-hooks-tls", "kubernetes.io/tls", map[string][]byte{"tls.crt": serverCrt, "tls.key": serverKey, "ca.crt": serverCA.PEM}),
		Secret(ns, "e2e-client-ca", "Opaque", map[string][]byte{"ca.crt": clientCA.PEM}),
		Secret(ns, "e2e-metacontroller-client", "kubernetes.io/tls", map[string][]byte{"tls.crt": clientCrt, "tls.key": clientKey}),
	} {
		if _, err := k.Apply(ctx, s, "e2e"); err != nil {
			return fmt.Errorf("secret %s: %w", Str(s, "metadata", "name"), err)
		}
	}
	if _, err := e.Helm("install", secureRelease, "./chart", "-n", ns,
		"--set", "compositeController.name="+secureRelease,
		"--set", "config.transports.rabbitmq.config.username=asya",
		"--set", fmt.Sprintf("compositeController.hookURL=https://127.0.0.1:%d", ports[0]),
		"--set", "hooks.tls.existingSecret=e2e-hooks-tls",
		"--set", "hooks.auth.mtls.enabled=true",
		"--set", "hooks.auth.mtls.clientCASecret=e2e-client-ca",
		"--set", "hooks.auth.mtls.clientCertSecret=e2e-metacontroller-client",
	); err != nil {
		return err
	}

	// The Secrets the chart's Deployment mounts, as files.
	d, err := e.ChartDeployment(ctx, ns, secureRelease)
	if err != nil {
		return err
	}
	mounts, err := MountSecrets(ctx, k, d, filepath.Join(e.Work, "credentials"))
	if err != nil {
		return fmt.Errorf("after helm install: %w", err)
	}
	args, err := mounts.CredentialArgs(d)
	if err != nil {
		return err
	}
	if err := RequireFlags(args, "--tls-cert-file", "--tls-key-file", "--auth-token-dir", "--client-ca-file"); err != nil {
		return fmt.Errorf("the secure Deployment: %w", err)
	}
	if err := e.startService(ports[0], args...); err != nil {
		return err
	}

	r, err := k.ByKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		return err
	}
	if e.CC, err = k.Get(ctx, r, "", secureRelease); err != nil {
		return err
	}
	e.Driver, err = NewDriver(ctx, k, e.CC)
	return err
}

// ChartDeployment is the Deployment a release of the chart installed.
func (e *Env) ChartDeployment(ctx context.Context, ns, name string) (Obj, error) {
	r, err := e.Cluster.Client.ByKind(ctx, "apps/v1", "Deployment")
	if err != nil {
		return nil, err
	}
	return e.Cluster.Client.Get(ctx, r, ns, name)
}

// RequireFlags fails unless args hold every flag of want.
func RequireFlags(args []string, want ...string) error {
	missing := map[string]bool{}
	for _, w := range want {
		missing[w] = true
	}
	for _, a := range args {
		delete(missing, a)
	}
	if len(missing) > 0 {
		return fmt.Errorf("lacks %v in %v", keysOf(missing), args)
	}
	return nil
}

// Secret is a Secret of type typ holding data.
func Secret(ns, name, typ string, data map[string][]byte) Obj {
	enc := Obj{}
	for k, v := range data {
		enc[k] = base64.StdEncoding.EncodeToString(v)
	}
	return Obj{"apiVersion": "v1", "kind": "Secret", "type": typ,
		"metadata": Obj{"name": name, "namespace": ns}, "data": enc}
}

func keysOf(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

// StartExtraService runs another asya-sync (the build bin) on cfg over
// plain HTTP on loopback until the test ends and returns its base URL.
func StartExtraService(t *testing.T, name, bin, cfg string, extraEnv []string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	// The kubeconfig lists pods for watch.pods whileUnhealthy.
	p, err := StartProcess("asya-sync-"+name, env.Work, append([]string{"ASYA_SYNC_CONFIG=", "KUBECONFIG=" + env.Cluster.Kubeconfig}, extraEnv...),
		bin, "serve", "--config", path, "--listen", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	if err := WaitFor(name+" /readyz", 30*time.Second, p, HTTPOK("http://"+addr+"/readyz")); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}
