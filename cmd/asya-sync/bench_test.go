package main

import (
	"bytes"
	"net/http"
	"os"
	"testing"
)

// BenchmarkHTTPSync drives POST /sync over loopback HTTP from parallel
// clients, the way Metacontroller's workers call it, with a golden request
// of a scaled RabbitMQ actor.
func BenchmarkHTTPSync(b *testing.B) {
	body, err := os.ReadFile("../../testdata/sync/scaling-on/request.json")
	if err != nil {
		b.Fatal(err)
	}
	ts := newTestServer(b, DefaultMaxBody)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(ts.URL+"/sync", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}
