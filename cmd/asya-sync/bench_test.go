package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/rs/zerolog"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	hooksync "github.com/asya-sh/asya-sync/sync"
)

// The benchmarks time a sync against json.Valid of the same request in the
// same run: speed is reported as that ratio (`make bench` prints it). The
// realistic request is what Metacontroller sends for a scaled actor with
// ten pods (see bench/fixture); scaling-on is a small golden request.
var benchRequests = []string{"realistic", "scaling-on"}

func benchBody(b testing.TB, name string) []byte {
	body, err := os.ReadFile("../../testdata/sync/" + name + "/request.json")
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// benchServer answers as the golden cases are answered: their service
// configuration, no broker (the queue ensure is cached in steady state).
func benchServer(b testing.TB) *server {
	cfg, err := config.Load("../../testdata/sync/config.yaml")
	if err != nil {
		b.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	return &server{
		hooks:   &hooksync.Handler{Config: cfg, Script: asyaruntime.Embedded(), Now: now},
		log:     zerolog.New(io.Discard),
		metrics: newMetrics(),
		maxBody: DefaultMaxBody,
	}
}

// BenchmarkJSONValid is the floor: checking that the request is JSON.
func BenchmarkJSONValid(b *testing.B) {
	for _, name := range benchRequests {
		b.Run(name, func(b *testing.B) {
			body := benchBody(b, name)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(body) {
					b.Fatal("invalid JSON")
				}
			}
		})
	}
}

// BenchmarkDecode splits the sync's largest part: the hook's decode of
// the realistic request against the decoder's own floor, every value of
// the same bytes read and skipped with nothing built
// (docs/performance.md#measured-what-is-left-above-the-floors).
func BenchmarkDecode(b *testing.B) {
	body := benchBody(b, "realistic")
	decodes := []struct {
		name   string
		decode func() error
	}{
		{"read only", func() error { return jsonv2.Unmarshal(body, new(readOnly), jsontext.AllowDuplicateNames(true)) }},
		{"hook", func() error { _, err := hook.DecodeSyncRequest(body); return err }},
	}
	for _, d := range decodes {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// readOnly reads a value and builds nothing of it.
type readOnly struct{}

func (*readOnly) UnmarshalJSONFrom(dec *jsontext.Decoder) error { return dec.SkipValue() }

// BenchmarkSync runs the whole hook in process: decode, validate, children,
// status and the encoded answer, everything but the HTTP transfer. Its
// pinned case is the realistic request answered by a later release, whose
// runtime script differs: the pods keep the one they run, as every actor's
// do after an upgrade until they roll for another reason (docs/design.md#runtime-rollout).
func BenchmarkSync(b *testing.B) {
	for _, name := range benchRequests {
		b.Run(name, func(b *testing.B) { benchSync(b, benchServer(b), benchBody(b, name)) })
	}
	b.Run("pinned", func(b *testing.B) {
		body := pinnedBody(b)
		s := benchServer(b)
		s.hooks.Script = asyaruntime.NewScript(s.hooks.Script.Source + "\n# a later release\n")
		benchSync(b, s, body)
	})
}

func benchSync(b *testing.B, s *server, body []byte) { benchHook(b, s.handleSync, body) }

// benchHook encodes each answer as the server does, into the buffer a
// call borrows.
func benchHook(b *testing.B, hook hookFunc, body []byte) {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r = r.WithContext(context.WithValue(r.Context(), callBuffersKey{}, new(callBuffers)))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		out, err := hook(context.Background(), body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := encodeAnswer(r, out.body); err != nil {
			b.Fatal(err)
		}
	}
}

// pinnedBody is the realistic request with the template hash the current
// release writes on the workload, as the next release receives it.
func pinnedBody(b testing.TB) []byte {
	body := benchBody(b, "realistic")
	out, err := benchServer(b).handleSync(context.Background(), body)
	if err != nil {
		b.Fatal(err)
	}
	var hash string
	for _, c := range out.body.(*hook.Response).Children {
		if child, _ := c.Object(); child["kind"] == "Deployment" {
			meta := child["metadata"].(map[string]any)
			hash = meta["annotations"].(map[string]any)[children.AnnotationTemplateHash].(string)
		}
	}
	const at = `"annotations":{"deployment.kubernetes.io/revision"`
	if hash == "" || bytes.Count(body, []byte(at)) != 1 {
		b.Fatal("the realistic request has no Deployment to pin")
	}
	return bytes.Replace(body, []byte(at), []byte(`"annotations":{"`+children.AnnotationTemplateHash+`":"`+hash+`",`+at[len(`"annotations":{`):]), 1)
}

// BenchmarkHTTPSync posts the request to /sync over loopback, one call
// after another, the client's own work included.
func BenchmarkHTTPSync(b *testing.B) {
	for _, name := range benchRequests {
		b.Run(name, func(b *testing.B) {
			body := benchBody(b, name)
			ts := httptest.NewServer(benchServer(b).routes())
			defer ts.Close()
			client := ts.Client()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(ts.URL+"/sync", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

// BenchmarkFinalize runs a finalize of the realistic request in process:
// the children are answered as last applied, so that Metacontroller
// deletes none of them and the garbage collector removes them once the
// actor is gone. With no broker configured, the queue's release is
// refused at once: the rest is every finalize's work.
func BenchmarkFinalize(b *testing.B) {
	s := benchServer(b)
	benchHook(b, s.handleFinalize, benchBody(b, "realistic"))
}
