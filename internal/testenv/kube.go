//go:build e2e

package testenv

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

// Kube is a small REST client for the test API server: JSON in and out,
// objects as maps, resources found by discovery. It is all the e2e tier
// needs and keeps client-go out of the picture.
type Kube struct {
	Base  string
	Token string
	HTTP  *http.Client

	mu        sync.Mutex
	Resources map[string][]APIResource // by group/version

	// Limiter, when set, paces every request as client-go's token bucket
	// (QPS and Burst of its rest.Config) paces Metacontroller's.
	Limiter *rate.Limiter
	// Counts, when set, counts the requests made: by verb (GET, LIST, WATCH,
	// PATCH, PUT, POST, DELETE), by answer code other than 2xx ("409") and
	// by both ("PUT 409").
	Counts    map[string]int
	lastWrite time.Time // of the latest request other than a read
}

// count records one request and its answer code.
func (k *Kube) count(verb string, code int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.Counts == nil {
		return
	}
	k.Counts[verb]++
	if code != 0 && code/100 != 2 {
		k.Counts[fmt.Sprint(code)]++
		k.Counts[fmt.Sprint(verb, " ", code)]++
	}
	if verb != "GET" && verb != "LIST" && verb != "WATCH" {
		k.lastWrite = time.Now()
	}
}

// APIResource is a resource as discovery lists it.
type APIResource struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Namespaced bool     `json:"namespaced"`
	Verbs      []string `json:"verbs"`
}

// GVR is a resource of a group version, and whether it is namespaced.
type GVR struct {
	APIVersion string // "apps/v1", "v1"
	Resource   string
	Kind       string
	Namespaced bool
}

// Obj is a Kubernetes object, or any part of one, as JSON decodes it.
type Obj = map[string]any

// APIError is a non-2xx answer of the API server.
type APIError struct {
	Code    int
	Reason  string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message)
}

// IsStatus reports whether err is the API server's answer with status code.
func IsStatus(err error, code int) bool {
	ae, ok := err.(*APIError)
	return ok && ae.Code == code
}

func newKube(base, token string, tlsCfg *tls.Config) *Kube {
	return &Kube{
		Base:  base,
		Token: token,
		HTTP: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 8},
		},
		Resources: map[string][]APIResource{},
	}
}

// Raw sends body and returns the answer's body and status code.
func (k *Kube) Raw(ctx context.Context, method, path string, body []byte, contentType string, headers ...string) ([]byte, int, error) {
	if k.Limiter != nil {
		if err := k.Limiter.Wait(ctx); err != nil {
			return nil, 0, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, k.Base+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+k.Token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := k.HTTP.Do(req)
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

// Watch opens a watch of r in every namespace from resourceVersion rv;
// the caller reads the stream of watch events from the body and closes it.
func (k *Kube) Watch(ctx context.Context, r GVR, rv string) (io.ReadCloser, error) {
	if k.Limiter != nil {
		if err := k.Limiter.Wait(ctx); err != nil {
			return nil, err
		}
	}
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}, "allowWatchBookmarks": {"true"}, "timeoutSeconds": {"600"}}
	req, err := http.NewRequestWithContext(ctx, "GET", k.Base+r.Path("", "")+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+k.Token)
	req.Header.Set("Accept", "application/json")
	// The stream outlives the client's request timeout.
	resp, err := (&http.Client{Transport: k.HTTP.Transport}).Do(req)
	if err != nil {
		k.count("WATCH", 0)
		return nil, err
	}
	k.count("WATCH", resp.StatusCode)
	if resp.StatusCode != 200 {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, &APIError{Code: resp.StatusCode, Message: FirstLine(data)}
	}
	return resp.Body, nil
}

// Do sends v as JSON (unless it is already []byte) and decodes the answer.
func (k *Kube) Do(ctx context.Context, method, path string, v any, contentType string) (Obj, error) {
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
	data, status, err := k.Raw(ctx, method, path, body, contentType)
	if err != nil {
		return nil, err
	}
	var out Obj
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("%s %s: %d, undecodable answer: %s", method, path, status, FirstLine(data))
		}
	}
	if status/100 != 2 {
		ae := &APIError{Code: status}
		if out != nil {
			ae.Reason, _ = out["reason"].(string)
			ae.Message, _ = out["message"].(string)
		}
		if ae.Message == "" {
			ae.Message = FirstLine(data)
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
func (k *Kube) discover(ctx context.Context, apiVersion string) ([]APIResource, error) {
	k.mu.Lock()
	rs, ok := k.Resources[apiVersion]
	k.mu.Unlock()
	if ok {
		return rs, nil
	}
	out, err := k.Do(ctx, "GET", groupPath(apiVersion), nil, "")
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", apiVersion, err)
	}
	raw, _ := json.Marshal(out["resources"])
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.Resources[apiVersion] = rs
	k.mu.Unlock()
	return rs, nil
}

func (k *Kube) forget() {
	k.mu.Lock()
	k.Resources = map[string][]APIResource{}
	k.mu.Unlock()
}

// ByKind maps a kind to its resource.
func (k *Kube) ByKind(ctx context.Context, apiVersion, kind string) (GVR, error) {
	rs, err := k.discover(ctx, apiVersion)
	if err != nil {
		return GVR{}, err
	}
	for _, r := range rs {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return GVR{apiVersion, r.Name, r.Kind, r.Namespaced}, nil
		}
	}
	return GVR{}, fmt.Errorf("no resource for kind %s in %s", kind, apiVersion)
}

// byResource maps a resource name to its kind.
func (k *Kube) byResource(ctx context.Context, apiVersion, resource string) (GVR, error) {
	rs, err := k.discover(ctx, apiVersion)
	if err != nil {
		return GVR{}, err
	}
	for _, r := range rs {
		if r.Name == resource {
			return GVR{apiVersion, r.Name, r.Kind, r.Namespaced}, nil
		}
	}
	return GVR{}, fmt.Errorf("no resource %s in %s", resource, apiVersion)
}

// Path builds a resource path; name may be empty for the collection.
func (r GVR) Path(namespace, name string) string {
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

// Get reads one object.
func (k *Kube) Get(ctx context.Context, r GVR, ns, name string) (Obj, error) {
	return k.Do(ctx, "GET", r.Path(ns, name), nil, "")
}

// List lists the objects of r in ns ("" for all) matching labelSelector.
func (k *Kube) List(ctx context.Context, r GVR, ns, labelSelector string) ([]Obj, error) {
	p := r.Path(ns, "")
	if labelSelector != "" {
		p += "?labelSelector=" + url.QueryEscape(labelSelector)
	}
	out, err := k.Do(ctx, "GET", p, nil, "")
	if err != nil {
		return nil, err
	}
	items, _ := out["items"].([]any)
	res := make([]Obj, 0, len(items))
	for _, it := range items {
		o := it.(Obj)
		// Lists leave apiVersion and kind off their items.
		o["apiVersion"], o["kind"] = r.APIVersion, r.Kind
		res = append(res, o)
	}
	return res, nil
}

// Apply server-side applies o as fieldManager, taking over conflicting fields.
func (k *Kube) Apply(ctx context.Context, o Obj, fieldManager string) (Obj, error) {
	r, err := k.ByKind(ctx, Str(o, "apiVersion"), Str(o, "kind"))
	if err != nil {
		return nil, err
	}
	q := url.Values{"fieldManager": {fieldManager}, "force": {"true"}, "fieldValidation": {"Strict"}}
	return k.Do(ctx, "PATCH", r.Path(Str(o, "metadata", "namespace"), Str(o, "metadata", "name"))+"?"+q.Encode(), o, "application/apply-patch+yaml")
}

// Create posts o; dryRun asks the server to validate and admit it without
// storing it.
func (k *Kube) Create(ctx context.Context, o Obj, dryRun bool) (Obj, error) {
	r, err := k.ByKind(ctx, Str(o, "apiVersion"), Str(o, "kind"))
	if err != nil {
		return nil, err
	}
	q := url.Values{"fieldValidation": {"Strict"}}
	if dryRun {
		q.Set("dryRun", "All")
	}
	return k.Do(ctx, "POST", r.Path(Str(o, "metadata", "namespace"), "")+"?"+q.Encode(), o, "")
}

// Delete deletes one object; one that is gone already is no error.
func (k *Kube) Delete(ctx context.Context, r GVR, ns, name string) error {
	_, err := k.Do(ctx, "DELETE", r.Path(ns, name), Obj{"propagationPolicy": "Background"}, "")
	if IsStatus(err, 404) {
		return nil
	}
	return err
}

// Str reads a string at a path of map keys; "" when absent.
func Str(o Obj, path ...string) string {
	v, _ := Field(o, path...).(string)
	return v
}

// Field is the value at a path of map keys; nil when absent.
func Field(o Obj, path ...string) any {
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

// MapAt is the map at a path of map keys; nil when absent.
func MapAt(o Obj, path ...string) Obj {
	m, _ := Field(o, path...).(map[string]any)
	return m
}

// ReadYAMLDocs reads a multi-document YAML file into objects, skipping
// empty documents.
func ReadYAMLDocs(path string) ([]Obj, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return SplitYAML(data, path)
}

// SplitYAML is the objects of a multi-document YAML, name naming it in errors.
func SplitYAML(data []byte, name string) ([]Obj, error) {
	var out []Obj
	for i, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(data), -1) {
		var o Obj
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i+1, err)
		}
		if len(o) > 0 {
			out = append(out, o)
		}
	}
	return out, nil
}
