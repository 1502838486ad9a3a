//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// secureRelease is the chart's secure default, installed next to the plain
// manifests under its own CompositeController, which the driver follows.
const secureRelease = "asya-sync-e2e"

// installSecure installs the chart's secure default (HTTPS, the generated
// Bearer token) plus mutual TLS, with certificates the test makes (no
// cert-manager here) for the service running on loopback; writes the
// Secrets to files as the kubelet would mount them; starts the service with
// the chart's credential flags; and builds the driver from the stored
// CompositeController.
func (e *testEnv) installSecure(ctx context.Context) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	serverCA, err := testenv.NewCA("asya-sync e2e server CA")
	if err != nil {
		return err
	}
	clientCA, err := testenv.NewCA("asya-sync e2e client CA")
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
	k := e.cluster.client
	for _, s := range []obj{
		secret(ns, "e2e-hooks-tls", "kubernetes.io/tls", map[string][]byte{"tls.crt": serverCrt, "tls.key": serverKey, "ca.crt": serverCA.PEM}),
		secret(ns, "e2e-client-ca", "Opaque", map[string][]byte{"ca.crt": clientCA.PEM}),
		secret(ns, "e2e-metacontroller-client", "kubernetes.io/tls", map[string][]byte{"tls.crt": clientCrt, "tls.key": clientKey}),
	} {
		if _, err := k.apply(ctx, s, "e2e"); err != nil {
			return fmt.Errorf("secret %s: %w", str(s, "metadata", "name"), err)
		}
	}
	if _, err := e.helm("install", secureRelease, "./chart", "-n", ns,
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
	d, err := e.chartDeployment(ctx, ns, secureRelease)
	if err != nil {
		return err
	}
	mounts, err := mountSecrets(ctx, k, d, filepath.Join(e.work, "credentials"))
	if err != nil {
		return fmt.Errorf("after helm install: %w", err)
	}
	args, err := mounts.credentialArgs(d)
	if err != nil {
		return err
	}
	if err := requireFlags(args, "--tls-cert-file", "--tls-key-file", "--auth-token-dir", "--client-ca-file"); err != nil {
		return fmt.Errorf("the secure Deployment: %w", err)
	}
	if err := e.startService(ports[0], args...); err != nil {
		return err
	}

	r, err := k.byKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		return err
	}
	if e.cc, err = k.get(ctx, r, "", secureRelease); err != nil {
		return err
	}
	e.driver, err = newDriver(ctx, k, e.cc)
	return err
}

// chartDeployment is the Deployment a release of the chart installed.
func (e *testEnv) chartDeployment(ctx context.Context, ns, name string) (obj, error) {
	r, err := e.cluster.client.byKind(ctx, "apps/v1", "Deployment")
	if err != nil {
		return nil, err
	}
	return e.cluster.client.get(ctx, r, ns, name)
}

// requireFlags fails unless args hold every flag of want.
func requireFlags(args []string, want ...string) error {
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

func secret(ns, name, typ string, data map[string][]byte) obj {
	enc := obj{}
	for k, v := range data {
		enc[k] = base64.StdEncoding.EncodeToString(v)
	}
	return obj{"apiVersion": "v1", "kind": "Secret", "type": typ,
		"metadata": obj{"name": name, "namespace": ns}, "data": enc}
}

func keysOf(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return strings.Join(out, " ")
}
