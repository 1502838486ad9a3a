//go:build e2e

package testenv

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
	URL           string
	Authorization string
	Client        *http.Client
	// etag: the webhook's etag cache is enabled. Metacontroller then keeps
	// the latest answer with an ETag per root object (kind, namespace,
	// name), sends that ETag in If-None-Match and takes a 304 for it.
	etag bool

	mu     sync.Mutex
	cached map[string]etagEntry
	stats  HookStats
}

type etagEntry struct {
	etag string
	body []byte
}

// HookStats counts a hook's calls.
type HookStats struct {
	Calls       int
	NotModified int           // 304 answers
	BytesSaved  int           // bodies of the cached answers the 304s stood for
	BytesIn     int           // bodies received
	Time        time.Duration // from sending the request to the end of the answer
}

// Snapshot is a copy of the hook's counts.
func (w *webhook) Snapshot() HookStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// NewWebhook resolves a CompositeController's hook spec as Metacontroller does.
func NewWebhook(ctx context.Context, k *Kube, spec Obj) (*webhook, error) {
	w := &webhook{URL: Str(spec, "url"), cached: map[string]etagEntry{}}
	w.etag, _ = Field(spec, "etag", "enabled").(bool)
	if w.URL == "" {
		svc := MapAt(spec, "service")
		scheme, port := "http", "80"
		if p := Str(svc, "protocol"); p != "" {
			scheme = p
		}
		if p := Field(svc, "port"); p != nil {
			port = fmt.Sprint(p)
		}
		w.URL = fmt.Sprintf("%s://%s.%s:%s%s", scheme, Str(svc, "name"), Str(svc, "namespace"), port, Str(spec, "path"))
	}
	if Field(spec, "basicAuth") != nil {
		return nil, fmt.Errorf("basicAuth: not implemented by the driver")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := MapAt(spec, "caBundle"); ca != nil {
		pemData, err := caBundle(ctx, k, ca)
		if err != nil {
			return nil, fmt.Errorf("caBundle: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("caBundle: no PEM certificate")
		}
	}
	if auth := MapAt(spec, "authorization"); auth != nil {
		if strings.EqualFold(strings.TrimSpace(Str(auth, "type")), "basic") {
			return nil, fmt.Errorf("authorization type %q is not supported", Str(auth, "type"))
		}
		token, err := SecretKey(ctx, k, MapAt(auth, "secretRef"), "")
		if err != nil {
			return nil, fmt.Errorf("authorization: %w", err)
		}
		scheme := strings.TrimSpace(Str(auth, "type"))
		if scheme == "" {
			scheme = "Bearer"
		}
		w.Authorization = scheme + " " + strings.TrimSpace(string(token))
	}
	if ct := MapAt(spec, "clientTLS"); ct != nil {
		ref := MapAt(ct, "secretRef")
		crt, err := SecretKey(ctx, k, withKey(ref, "tls.crt"), "")
		if err != nil {
			return nil, fmt.Errorf("clientTLS: %w", err)
		}
		key, err := SecretKey(ctx, k, withKey(ref, "tls.key"), "")
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
	if d, err := time.ParseDuration(Str(spec, "timeout")); err == nil {
		timeout = d
	}
	w.Client = &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: cfg, MaxIdleConnsPerHost: 16}}
	return w, nil
}

// caBundle reads the PEM of inline, secretRef or configMapRef (key
// defaulting to ca.crt).
func caBundle(ctx context.Context, k *Kube, ca Obj) ([]byte, error) {
	if inline := Str(ca, "inline"); inline != "" {
		return []byte(inline), nil
	}
	if ref := MapAt(ca, "secretRef"); ref != nil {
		data, err := SecretKey(ctx, k, ref, "ca.crt")
		if err == nil && len(data) == 0 {
			err = fmt.Errorf("key %q in Secret %s/%s is empty", Str(ref, "key"), Str(ref, "namespace"), Str(ref, "name"))
		}
		return data, err
	}
	ref := MapAt(ca, "configMapRef")
	if ref == nil {
		return nil, fmt.Errorf("none of inline, secretRef, configMapRef")
	}
	cm, err := k.Get(ctx, GVR{APIVersion: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, Str(ref, "namespace"), Str(ref, "name"))
	if err != nil {
		return nil, err
	}
	key := Str(ref, "key")
	if key == "" {
		key = "ca.crt"
	}
	data := Str(cm, "data", key)
	if data == "" {
		return nil, fmt.Errorf("ConfigMap %s/%s has no %s", Str(ref, "namespace"), Str(ref, "name"), key)
	}
	return []byte(data), nil
}

// SecretKey reads one key of a Secret named by ref {name, namespace, key}.
func SecretKey(ctx context.Context, k *Kube, ref Obj, defaultKey string) ([]byte, error) {
	if ref == nil {
		return nil, fmt.Errorf("no secretRef")
	}
	key := Str(ref, "key")
	if key == "" {
		key = defaultKey
	}
	s, err := k.Get(ctx, GVR{APIVersion: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}, Str(ref, "namespace"), Str(ref, "name"))
	if err != nil {
		return nil, err
	}
	enc, ok := MapAt(s, "data")[key].(string)
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s has no key %q", Str(ref, "namespace"), Str(ref, "name"), key)
	}
	return base64.StdEncoding.DecodeString(enc)
}

func withKey(ref Obj, key string) Obj {
	out := Obj{}
	for k, v := range ref {
		out[k] = v
	}
	out["key"] = key
	return out
}

// AtBaseURL is cc with every webhook's url at base (a service the test
// runs elsewhere); the connection fields stay as they are.
func AtBaseURL(cc Obj, base string) Obj {
	out := DeepCopy(cc)
	for _, h := range []string{"customize", "sync", "finalize"} {
		MapAt(out, "spec", "hooks", h, "webhook")["url"] = strings.TrimSuffix(base, "/") + "/" + h
	}
	return out
}
