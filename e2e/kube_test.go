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

	"golang.org/x/time/rate"
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

	// limiter, when set, paces every request as client-go's token bucket
	// (QPS and Burst of its rest.Config) paces Metacontroller's.
	limiter *rate.Limiter
	// counts, when set, counts the requests made: by verb (GET, LIST, WATCH,
	// PATCH, PUT, POST, DELETE), by answer code other than 2xx ("409") and
	// by both ("PUT 409").
	counts    map[string]int
	lastWrite time.Time // of the latest request other than a read
}

// count records one request and its answer code.
func (k *kube) count(verb string, code int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.counts == nil {
		return
	}
	k.counts[verb]++
	if code != 0 && code/100 != 2 {
		k.counts[fmt.Sprint(code)]++
		k.counts[fmt.Sprint(verb, " ", code)]++
	}
	if verb != "GET" && verb != "LIST" && verb != "WATCH" {
		k.lastWrite = time.Now()
	}
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
	if k.limiter != nil {
		if err := k.limiter.Wait(ctx); err != nil {
			return nil, 0, err
		}
	}
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
		k.count(verbOf(method, path), 0)
		return nil, 0, err
	}
	defer resp.Body.Close()
	k.count(verbOf(method, path), resp.StatusCode)
	data, err := io.ReadAll(resp.Body)
	return data, resp.StatusCode, err
}

// verbOf names a request as the API server's audit log does: a GET of a
// collection is a LIST.
func verbOf(method, path string) string {
	if method != "GET" {
		return method
	}
	p, _, _ := strings.Cut(path, "?")
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if len(parts) < 3 {
		return "GET" // discovery
	}
	// /api/v1/<resource>, /apis/<group>/<version>/<resource>, each
	// optionally under namespaces/<ns>: an odd count of segments after the
	// group version is a collection.
	rest := parts[2:]
	if parts[0] == "apis" && len(parts) > 2 {
		rest = parts[3:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		rest = rest[2:]
		if len(rest) == 0 {
			return "GET" // the Namespace itself
		}
	}
	if len(rest) == 1 {
		return "LIST"
	}
	return "GET"
}

// watch opens a watch of r in every namespace from resourceVersion rv;
// the caller reads the stream of watch events from the body and closes it.
func (k *kube) watch(ctx context.Context, r gvr, rv string) (io.ReadCloser, error) {
	if k.limiter != nil {
		if err := k.limiter.Wait(ctx); err != nil {
			return nil, err
		}
	}
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}, "allowWatchBookmarks": {"true"}, "timeoutSeconds": {"600"}}
	req, err := http.NewRequestWithContext(ctx, "GET", k.base+r.path("", "")+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+k.token)
	req.Header.Set("Accept", "application/json")
	// The stream outlives the client's request timeout.
	resp, err := (&http.Client{Transport: k.http.Transport}).Do(req)
	if err != nil {
		k.count("WATCH", 0)
		return nil, err
	}
	k.count("WATCH", resp.StatusCode)
	if resp.StatusCode != 200 {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, &apiError{Code: resp.StatusCode, Message: firstLine(data)}
	}
	return resp.Body, nil
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
