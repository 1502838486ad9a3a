package actorindex

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// BenchmarkWatchEvents decodes a stream of watch events of the realistic
// request's actor (managedFields, last-applied annotation, status; 6 KB)
// as the REST client decodes them: with the index's codec, and with the
// dynamic client's, which the index used before. json.Valid of the same
// bytes is the baseline to read both against.
func BenchmarkWatchEvents(b *testing.B) {
	var request struct {
		Parent json.RawMessage `json:"parent"`
	}
	data, err := os.ReadFile("../../testdata/sync/realistic/request.json")
	if err == nil {
		err = json.Unmarshal(data, &request)
	}
	if err != nil {
		b.Fatal(err)
	}
	const events = 100 // per op
	var stream bytes.Buffer
	for range events {
		stream.WriteString(`{"type":"MODIFIED","object":`)
		stream.Write(request.Parent)
		stream.WriteString("}\n")
	}
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			if !json.Valid(request.Parent) {
				b.Fatal("invalid")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/event")
	})
	dynamicClient := dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
	for _, c := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{{"index", negotiated}, {"dynamic client", dynamicClient}} {
		b.Run(c.name, func(b *testing.B) {
			objects, stream2, framer, err := runtime.NewClientNegotiator(c.ns, v1alpha1.GroupVersion).StreamDecoder("application/json", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			decoded := 0
			for b.Loop() {
				frames := framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream.Bytes())))
				dec := restwatch.NewDecoder(streaming.NewDecoder(frames, stream2), objects)
				for {
					if _, _, err := dec.Decode(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
					decoded++
				}
			}
			if decoded != events*b.N {
				b.Fatalf("decoded %d events of %d", decoded, events*b.N)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(decoded)/1e3, "µs/event")
		})
	}
}
