//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// secretMounts plays the kubelet's part for the Secret volumes of a
// Deployment's pod template, for a service the test runs as a process: it
// writes each volume into a directory of its own the way the kubelet's
// atomic writer does (a timestamped directory holding the files, the
// symlink ..data to it, and one symlink per key through ..data, swapped in
// one rename when the Secret changes), and with run it updates them
// periodically, as the kubelet's sync does, a while after the Secret
// changed.
type secretMounts struct {
	kube    *kube
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

// mountSecrets reads the Secret volumes of d's pod template and the mounts
// of its first container, and writes them under root once.
func mountSecrets(ctx context.Context, k *kube, d obj, root string) (*secretMounts, error) {
	m := &secretMounts{kube: k, ns: str(d, "metadata", "namespace"), root: root}
	pod := mapAt(d, "spec", "template", "spec")
	containers, _ := pod["containers"].([]any)
	if len(containers) == 0 {
		return nil, fmt.Errorf("Deployment %s has no container", str(d, "metadata", "name"))
	}
	mountPaths := map[string]string{}
	mounts, _ := containers[0].(obj)["volumeMounts"].([]any)
	for _, vm := range mounts {
		mountPaths[str(vm.(obj), "name")] = str(vm.(obj), "mountPath")
	}
	vols, _ := pod["volumes"].([]any)
	for _, v := range vols {
		sec := mapAt(v.(obj), "secret")
		if sec == nil {
			continue
		}
		sv := secretVolume{name: str(v.(obj), "name"), secret: str(sec, "secretName"), mountPath: mountPaths[str(v.(obj), "name")]}
		sv.dir = filepath.Join(root, sv.name)
		if items, ok := sec["items"].([]any); ok {
			sv.items = map[string]string{}
			for _, it := range items {
				sv.items[str(it.(obj), "key")] = str(it.(obj), "path")
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
func (m *secretMounts) sync(ctx context.Context) error {
	r := gvr{APIVersion: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	for i := range m.volumes {
		v := &m.volumes[i]
		s, err := m.kube.get(ctx, r, m.ns, v.secret)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.name, err)
		}
		files := map[string][]byte{}
		for key, enc := range mapAt(s, "data") {
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
			if _, ok := mapAt(s, "data")[key]; !ok {
				return fmt.Errorf("volume %s: Secret %s has no key %q", v.name, v.secret, key)
			}
		}
		if content := mustJSON(files); content != v.written {
			if err := atomicWrite(v.dir, files); err != nil {
				return fmt.Errorf("volume %s: %w", v.name, err)
			}
			v.written = content
		}
	}
	return nil
}

// run syncs every period until ctx ends; errors are retried next period,
// as the kubelet does.
func (m *secretMounts) run(ctx context.Context, period time.Duration) {
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
func (m *secretMounts) localPath(p string) (string, bool) {
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

// credentialArgs are the credential flags of d's first container, each path
// replaced by where m mounts it here, so that the service runs exactly as
// the chart configures it.
func (m *secretMounts) credentialArgs(d obj) ([]string, error) {
	containers, _ := field(d, "spec", "template", "spec", "containers").([]any)
	if len(containers) == 0 {
		return nil, fmt.Errorf("Deployment %s has no container", str(d, "metadata", "name"))
	}
	raw, _ := containers[0].(obj)["args"].([]any)
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
