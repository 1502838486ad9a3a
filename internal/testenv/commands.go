//go:build e2e

package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Helm runs the built helm against the test API server, with its caches in
// the work directory.
func (e *Env) Helm(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(e.Bin, "helm"), args...)
	cmd.Dir = e.Root
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+e.Cluster.Kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(e.Work, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(e.Work, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(e.Work, "helm", "data"),
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// BrokerUser is the least the chart's default values need to render: the
// default RabbitMQ transport's user, which the chart does not default.
// Given first, so that any later -f or --set overrides it.
var BrokerUser = []string{"-f", "e2e/testdata/values-broker-user.yaml"}

// DocFence is the first block of lang after heading in the file at path
// that starts with first (any, when empty).
func DocFence(path, heading, lang, first string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	text := string(data)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		return "", fmt.Errorf("%s: no heading %q", path, heading)
	}
	fence := "\n```" + lang + "\n"
	for rest := text[i:]; ; {
		j := strings.Index(rest, fence)
		if j < 0 {
			return "", fmt.Errorf("%s: no %s block starting %q after %q", path, lang, first, heading)
		}
		block := rest[j+len(fence):]
		end := strings.Index(block, "\n```")
		if end < 0 {
			return "", fmt.Errorf("%s: unterminated block after %q", path, heading)
		}
		if strings.HasPrefix(block, first) {
			return block[:end+1], nil
		}
		rest = block[end:]
	}
}

// Kubectl runs the built kubectl against the test API server.
func Kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.Bin, "kubectl"), append([]string{"--kubeconfig", env.Cluster.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
