package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// CA issues certificates for tests, made at run time: no key is checked in.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte // the CA certificate
}

var serial atomic.Int64

// NewCA makes a CA valid for an hour either side of now.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Issue returns a leaf certificate and its key in PEM. A server certificate
// (usage ExtKeyUsageServerAuth) names 127.0.0.1 and localhost.
func (ca *CA) Issue(cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	return ca.issue(cn, usage, nil)
}

// IssueServer returns a server certificate for dnsNames and its key in PEM.
func (ca *CA) IssueServer(dnsNames ...string) (certPEM, keyPEM []byte, err error) {
	return ca.issue(dnsNames[0], x509.ExtKeyUsageServerAuth, dnsNames)
}

func (ca *CA) issue(cn string, usage x509.ExtKeyUsage, dnsNames []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	switch {
	case dnsNames != nil:
		tmpl.DNSNames = dnsNames
	case usage == x509.ExtKeyUsageServerAuth:
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// TestCA is a CA whose failures fail the test.
type TestCA struct {
	*CA
	t testing.TB
}

// NewTestCA makes a CA for a test.
func NewTestCA(t testing.TB, name string) TestCA {
	t.Helper()
	ca, err := NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return TestCA{ca, t}
}

// Issue is CA.Issue, failing the test on error.
func (ca TestCA) Issue(cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	ca.t.Helper()
	c, k, err := ca.CA.Issue(cn, usage)
	if err != nil {
		ca.t.Fatal(err)
	}
	return c, k
}

// ClientCert issues a client certificate ready for a tls.Config.
func (ca TestCA) ClientCert(cn string) tls.Certificate {
	ca.t.Helper()
	pair, err := tls.X509KeyPair(ca.Issue(cn, x509.ExtKeyUsageClientAuth))
	if err != nil {
		ca.t.Fatal(err)
	}
	return pair
}
