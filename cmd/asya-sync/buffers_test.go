package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
)

// Calls that run at once, with different requests, each get exactly the
// answer json.Marshal gives for their own request, although they borrow
// the same buffers one after another.
func TestConcurrentCallsGetTheirOwnAnswers(t *testing.T) {
	s := benchServer(t)
	ts := httptest.NewServer(s.routes())
	defer ts.Close()
	type call struct{ request, answer []byte }
	var calls []call
	for _, name := range []string{"realistic", "scaling-on", "minimal", "running-with-counts"} {
		body, err := os.ReadFile("../../testdata/sync/" + name + "/request.json")
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.handleSync(context.Background(), body)
		if err != nil {
			t.Fatal(name, err)
		}
		answer, err := json.Marshal(out.body)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, call{body, append(answer, '\n')})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 25 {
				c := calls[(i+j)%len(calls)]
				resp, err := http.Post(ts.URL+"/sync", "application/json", bytes.NewReader(c.request))
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && !bytes.Equal(got, c.answer) {
					err = fmt.Errorf("answer differs from json.Marshal of the request's own answer (%d bytes, want %d)", len(got), len(c.answer))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
