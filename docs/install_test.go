package docs

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMakingACAAndCertificate runs docs/install.md's "Making a CA and
// certificate" as printed, with the real openssl and a kubectl that
// records its call: the certificate it makes is one a client that trusts
// the CA accepts for each name of the hook Service (the names
// Metacontroller calls and the rotation lists), its key matches, and the
// Secret it stores is the chart's TLS Secret with the keys the chart
// mounts.
func TestMakingACAAndCertificate(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl to run the procedure with")
	}
	block := fencedAfter(t, "docs/install.md", "#### Making a CA and certificate", "sh")
	calls, dir := runRecorded(t, block, []string{"kubectl"})
	read := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the procedure made no %s: %v", name, err)
		}
		return data
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(read("ca.crt")) {
		t.Fatal("ca.crt holds no PEM certificate")
	}
	pair, err := tls.X509KeyPair(read("tls.crt"), read("tls.key"))
	if err != nil {
		t.Fatalf("tls.crt and tls.key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"asya-sync.asya-system", "asya-sync.asya-system.svc", "asya-sync.asya-system.svc.cluster.local"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("a client trusting ca.crt refuses tls.crt for %s: %v", name, err)
		}
	}
	want := []string{"kubectl", "-n", "asya-system", "create", "secret", "generic", "asya-sync-tls", "--type=kubernetes.io/tls",
		"--from-file=tls.crt", "--from-file=tls.key", "--from-file=ca.crt"}
	if len(calls) != 1 || !slices.Equal(calls[0], want) {
		t.Errorf("the procedure ran kubectl as %q, want %q", calls, want)
	}
}

// TestFirstInstallIsTheQuickStarts: docs/install.md's first install of the
// chart is, command for command, the README quick start's broker user and
// install, which the node tier runs as printed until an actor's message
// comes back (TestNodeQuickStart): the first install connects its actors.
func TestFirstInstallIsTheQuickStarts(t *testing.T) {
	install := shellCommands(fencedAfter(t, "docs/install.md", "## 3. asya-sync", "sh"))
	var quick []string
	for _, b := range shellBlocks(t, "README.md", "## Quick start") {
		quick = append(quick, shellCommands(b)...)
	}
	i := slices.Index(quick, "rabbitmqctl add_user asya change-me")
	if i < 0 || len(quick) < i+len(install) {
		t.Fatalf("README's quick start does not make the broker user:\n%s", strings.Join(quick, "\n"))
	}
	if diff := cmp.Diff(quick[i:i+len(install)], install); diff != "" {
		t.Errorf("docs/install.md's first install differs from the README's quick start (-quick start +install.md):\n%s", diff)
	}
	if !slices.ContainsFunc(install, func(c string) bool { return strings.HasPrefix(c, "helm install asya-sync ./chart") }) {
		t.Errorf("docs/install.md's first block installs no chart:\n%s", strings.Join(install, "\n"))
	}
}

// shellBlocks are the sh blocks of a document's section, up to the next
// heading of its level.
func shellBlocks(t *testing.T, file, heading string) []string {
	t.Helper()
	_, section, ok := strings.Cut(readDoc(t, file), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no heading %q", file, heading)
	}
	level := heading[:strings.Index(heading, " ")+1]
	if end := strings.Index(section, "\n"+level); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(section, "\n```sh\n")
		if !ok {
			return blocks
		}
		block, after, _ := strings.Cut(rest, "\n```")
		blocks = append(blocks, block)
		section = after
	}
}

// shellCommands are a block's commands: continued lines joined, comments
// and blank lines left out, spaces collapsed.
func shellCommands(block string) []string {
	var cmds []string
	cur := ""
	for _, line := range strings.Split(block, "\n") {
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, _, _ = strings.Cut(cur+line, " #")
		cur = ""
		if c := strings.Join(strings.Fields(line), " "); c != "" && !strings.HasPrefix(c, "#") {
			cmds = append(cmds, c)
		}
	}
	return cmds
}
