package docs

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
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
