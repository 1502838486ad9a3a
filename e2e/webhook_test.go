//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// webhook is how the driver calls one hook, resolved from the
// CompositeController the way Metacontroller 4.16+ resolves a webhook's
// connection fields (pkg/hooks/auth.go, cabundle.go, webhook.go): url (or
// service and path); caBundle to verify the server, every certificate of
// the PEM trusted; authorization's Secret key, trimmed, after the type
// ("Bearer" unless set) as the Authorization header, set as Metacontroller
// sets it, so that Go's client refuses a value with a newline as it does
// there; clientTLS's kubernetes.io/tls Secret as the client certificate.
// The Secrets are read once, when the webhook is resolved: at the start,
// then only when the CompositeController's spec changes (driver.follow).
type webhook struct {
	url           string
	authorization string
	client        *http.Client
	// etag: the webhook's etag cache is enabled. Metacontroller then keeps
	// the latest answer with an ETag per root object (kind, namespace,
	// name), sends that ETag in If-None-Match and takes a 304 for it.
	etag bool

	mu     sync.Mutex
	cached map[string]etagEntry
	stats  hookStats
}

type etagEntry struct {
	etag string
	body []byte
}

// hookStats counts a hook's calls.
type hookStats struct {
	Calls       int
	NotModified int           // 304 answers
	BytesSaved  int           // bodies of the cached answers the 304s stood for
	BytesIn     int           // bodies received
	Time        time.Duration // from sending the request to the end of the answer
}

func (w *webhook) snapshot() hookStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

func newWebhook(ctx context.Context, k *kube, spec obj) (*webhook, error) {
	w := &webhook{url: str(spec, "url"), cached: map[string]etagEntry{}}
	w.etag, _ = field(spec, "etag", "enabled").(bool)
	if w.url == "" {
		svc := mapAt(spec, "service")
		scheme, port := "http", "80"
		if p := str(svc, "protocol"); p != "" {
			scheme = p
		}
		if p := field(svc, "port"); p != nil {
			port = fmt.Sprint(p)
		}
		w.url = fmt.Sprintf("%s://%s.%s:%s%s", scheme, str(svc, "name"), str(svc, "namespace"), port, str(spec, "path"))
	}
	if field(spec, "basicAuth") != nil {
		return nil, fmt.Errorf("basicAuth: not implemented by the driver")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := mapAt(spec, "caBundle"); ca != nil {
		pemData, err := caBundle(ctx, k, ca)
		if err != nil {
			return nil, fmt.Errorf("caBundle: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("caBundle: no PEM certificate")
		}
	}
	if auth := mapAt(spec, "authorization"); auth != nil {
		if strings.EqualFold(strings.TrimSpace(str(auth, "type")), "basic") {
			return nil, fmt.Errorf("authorization type %q is not supported", str(auth, "type"))
		}
		token, err := secretKey(ctx, k, mapAt(auth, "secretRef"), "")
		if err != nil {
			return nil, fmt.Errorf("authorization: %w", err)
		}
		scheme := strings.TrimSpace(str(auth, "type"))
		if scheme == "" {
			scheme = "Bearer"
		}
		w.authorization = scheme + " " + strings.TrimSpace(string(token))
	}
	if ct := mapAt(spec, "clientTLS"); ct != nil {
		ref := mapAt(ct, "secretRef")
		crt, err := secretKey(ctx, k, withKey(ref, "tls.crt"), "")
		if err != nil {
			return nil, fmt.Errorf("clientTLS: %w", err)
		}
		key, err := secretKey(ctx, k, withKey(ref, "tls.key"), "")
		if err != nil {
			return nil, fmt.Errorf("clientTLS: %w", err)
		}
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, fmt.Errorf("clientTLS: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	timeout := 10 * time.Second
	if d, err := time.ParseDuration(str(spec, "timeout")); err == nil {
		timeout = d
	}
	w.client = &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: cfg, MaxIdleConnsPerHost: 16}}
	return w, nil
}

// caBundle reads the PEM of inline, secretRef or configMapRef (key
// defaulting to ca.crt).
func caBundle(ctx context.Context, k *kube, ca obj) ([]byte, error) {
	if inline := str(ca, "inline"); inline != "" {
		return []byte(inline), nil
	}
	if ref := mapAt(ca, "secretRef"); ref != nil {
		data, err := secretKey(ctx, k, ref, "ca.crt")
		if err == nil && len(data) == 0 {
			err = fmt.Errorf("key %q in Secret %s/%s is empty", str(ref, "key"), str(ref, "namespace"), str(ref, "name"))
		}
		return data, err
	}
	ref := mapAt(ca, "configMapRef")
	if ref == nil {
		return nil, fmt.Errorf("none of inline, secretRef, configMapRef")
	}
	cm, err := k.get(ctx, gvr{APIVersion: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, str(ref, "namespace"), str(ref, "name"))
	if err != nil {
		return nil, err
	}
	key := str(ref, "key")
	if key == "" {
		key = "ca.crt"
	}
	data := str(cm, "data", key)
	if data == "" {
		return nil, fmt.Errorf("ConfigMap %s/%s has no %s", str(ref, "namespace"), str(ref, "name"), key)
	}
	return []byte(data), nil
}

// secretKey reads one key of a Secret named by ref {name, namespace, key}.
func secretKey(ctx context.Context, k *kube, ref obj, defaultKey string) ([]byte, error) {
	if ref == nil {
		return nil, fmt.Errorf("no secretRef")
	}
	key := str(ref, "key")
	if key == "" {
		key = defaultKey
	}
	s, err := k.get(ctx, gvr{APIVersion: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}, str(ref, "namespace"), str(ref, "name"))
	if err != nil {
		return nil, err
	}
	enc, ok := mapAt(s, "data")[key].(string)
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s has no key %q", str(ref, "namespace"), str(ref, "name"), key)
	}
	return base64.StdEncoding.DecodeString(enc)
}

func withKey(ref obj, key string) obj {
	out := obj{}
	for k, v := range ref {
		out[k] = v
	}
	out["key"] = key
	return out
}

// atBaseURL is cc with every webhook's url at base (a service the test
// runs elsewhere); the connection fields stay as they are.
func atBaseURL(cc obj, base string) obj {
	out := deepCopy(cc)
	for _, h := range []string{"customize", "sync", "finalize"} {
		mapAt(out, "spec", "hooks", h, "webhook")["url"] = strings.TrimSuffix(base, "/") + "/" + h
	}
	return out
}
