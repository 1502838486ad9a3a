//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// kube is a small REST client for the test API server: JSON in and out,
// objects as maps, resources found by discovery. It is all the e2e tier
// needs and keeps client-go out of the picture.
type kube struct {
	base  string
	token string
	http  *http.Client

	mu        sync.Mutex
	resources map[string][]apiResource // by group/version
}

type apiResource struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Namespaced bool     `json:"namespaced"`
	Verbs      []string `json:"verbs"`
}

// gvr is a resource of a group version, and whether it is namespaced.
type gvr struct {
	APIVersion string // "apps/v1", "v1"
	Resource   string
	Kind       string
	Namespaced bool
}

type obj = map[string]any

// apiError is a non-2xx answer of the API server.
type apiError struct {
	Code    int
	Reason  string
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message)
}

func isStatus(err error, code int) bool {
	ae, ok := err.(*apiError)
	return ok && ae.Code == code
}

func newKube(base, token string, tlsCfg *tls.Config) *kube {
	return &kube{
		base:  base,
		token: token,
		http: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 8},
		},
		resources: map[string][]apiResource{},
	}
}

func (k *kube) raw(ctx context.Context, method, path string, body []byte, contentType string, headers ...string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, k.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+k.token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return data, resp.StatusCode, err
}

// do sends v as JSON (unless it is already []byte) and decodes the answer.
func (k *kube) do(ctx context.Context, method, path string, v any, contentType string) (obj, error) {
	var body []byte
	switch b := v.(type) {
	case nil:
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	if contentType == "" && body != nil {
		contentType = "application/json"
	}
	data, status, err := k.raw(ctx, method, path, body, contentType)
	if err != nil {
		return nil, err
	}
	var out obj
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("%s %s: %d, undecodable answer: %s", method, path, status, firstLine(data))
		}
	}
	if status/100 != 2 {
		ae := &apiError{Code: status}
		if out != nil {
			ae.Reason, _ = out["reason"].(string)
			ae.Message, _ = out["message"].(string)
		}
		if ae.Message == "" {
			ae.Message = firstLine(data)
		}
		return out, ae
	}
	return out, nil
}

func groupPath(apiVersion string) string {
	if apiVersion == "v1" {
		return "/api/v1"
	}
	return "/apis/" + apiVersion
}

// discover lists the resources of a group version; forget drops the cache
// (after installing CRDs).
func (k *kube) discover(ctx context.Context, apiVersion string) ([]apiResource, error) {
	k.mu.Lock()
	rs, ok := k.resources[apiVersion]
	k.mu.Unlock()
	if ok {
		return rs, nil
	}
	out, err := k.do(ctx, "GET", groupPath(apiVersion), nil, "")
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", apiVersion, err)
	}
	raw, _ := json.Marshal(out["resources"])
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.resources[apiVersion] = rs
	k.mu.Unlock()
	return rs, nil
}

func (k *kube) forget() {
	k.mu.Lock()
	k.resources = map[string][]apiResource{}
	k.mu.Unlock()
}

// byKind maps a kind to its resource.
func (k *kube) byKind(ctx context.Context, apiVersion, kind string) (gvr, error) {
	rs, err := k.discover(ctx, apiVersion)
	if err != nil {
		return gvr{}, err
	}
	for _, r := range rs {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return gvr{apiVersion, r.Name, r.Kind, r.Namespaced}, nil
		}
	}
	return gvr{}, fmt.Errorf("no resource for kind %s in %s", kind, apiVersion)
}

// byResource maps a resource name to its kind.
func (k *kube) byResource(ctx context.Context, apiVersion, resource string) (gvr, error) {
	rs, err := k.discover(ctx, apiVersion)
	if err != nil {
		return gvr{}, err
	}
	for _, r := range rs {
		if r.Name == resource {
			return gvr{apiVersion, r.Name, r.Kind, r.Namespaced}, nil
		}
	}
	return gvr{}, fmt.Errorf("no resource %s in %s", resource, apiVersion)
}

// path builds a resource path; name may be empty for the collection.
func (r gvr) path(namespace, name string) string {
	p := groupPath(r.APIVersion)
	if r.Namespaced && namespace != "" {
		p += "/namespaces/" + namespace
	}
	p += "/" + r.Resource
	if name != "" {
		p += "/" + name
	}
	return p
}

func (k *kube) get(ctx context.Context, r gvr, ns, name string) (obj, error) {
	return k.do(ctx, "GET", r.path(ns, name), nil, "")
}

func (k *kube) list(ctx context.Context, r gvr, ns, labelSelector string) ([]obj, error) {
	p := r.path(ns, "")
	if labelSelector != "" {
		p += "?labelSelector=" + url.QueryEscape(labelSelector)
	}
	out, err := k.do(ctx, "GET", p, nil, "")
	if err != nil {
		return nil, err
	}
	items, _ := out["items"].([]any)
	res := make([]obj, 0, len(items))
	for _, it := range items {
		o := it.(obj)
		// Lists leave apiVersion and kind off their items.
		o["apiVersion"], o["kind"] = r.APIVersion, r.Kind
		res = append(res, o)
	}
	return res, nil
}

// apply server-side applies o as fieldManager, taking over conflicting fields.
func (k *kube) apply(ctx context.Context, o obj, fieldManager string) (obj, error) {
	r, err := k.byKind(ctx, str(o, "apiVersion"), str(o, "kind"))
	if err != nil {
		return nil, err
	}
	q := url.Values{"fieldManager": {fieldManager}, "force": {"true"}, "fieldValidation": {"Strict"}}
	return k.do(ctx, "PATCH", r.path(str(o, "metadata", "namespace"), str(o, "metadata", "name"))+"?"+q.Encode(), o, "application/apply-patch+yaml")
}

// create posts o; dryRun asks the server to validate and admit it without
// storing it.
func (k *kube) create(ctx context.Context, o obj, dryRun bool) (obj, error) {
	r, err := k.byKind(ctx, str(o, "apiVersion"), str(o, "kind"))
	if err != nil {
		return nil, err
	}
	q := url.Values{"fieldValidation": {"Strict"}}
	if dryRun {
		q.Set("dryRun", "All")
	}
	return k.do(ctx, "POST", r.path(str(o, "metadata", "namespace"), "")+"?"+q.Encode(), o, "")
}

func (k *kube) delete(ctx context.Context, r gvr, ns, name string) error {
	_, err := k.do(ctx, "DELETE", r.path(ns, name), obj{"propagationPolicy": "Background"}, "")
	if isStatus(err, 404) {
		return nil
	}
	return err
}

// str reads a string at a path of map keys; "" when absent.
func str(o obj, path ...string) string {
	v, _ := field(o, path...).(string)
	return v
}

func field(o obj, path ...string) any {
	var cur any = o
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func mapAt(o obj, path ...string) obj {
	m, _ := field(o, path...).(map[string]any)
	return m
}

// readYAMLDocs reads a multi-document YAML file into objects, skipping
// empty documents.
func readYAMLDocs(path string) ([]obj, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return splitYAML(data, path)
}

func splitYAML(data []byte, name string) ([]obj, error) {
	var out []obj
	for i, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(data), -1) {
		var o obj
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i+1, err)
		}
		if len(o) > 0 {
			out = append(out, o)
		}
	}
	return out, nil
}
