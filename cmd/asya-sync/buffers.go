package main

import (
	"bytes"
	"context"
	"net/http"
	"sync"

	"github.com/asya-sh/asya-sync/api/hook"
)

// A realistic sync request is about 180 KB and its answer about 20 KB.
// Reading every body into a new buffer and encoding every answer into
// another was a third of the bytes a sync allocated, and so a third of the
// garbage collections, each of which slows the syncs running during it.
// A hook call borrows both buffers instead and gives them back once its
// answer is written.

// maxKeptBuffer bounds the buffers kept for the next call: a rare huge
// request allocates its own.
const maxKeptBuffer = 1 << 20

// callBuffers are the buffers one hook call borrows.
type callBuffers struct {
	body   []byte
	answer bytes.Buffer
}

var callBufferPool = sync.Pool{New: func() any { return new(callBuffers) }}

type callBuffersKey struct{}

// lendBuffers lends each call the buffers for its body and its answer, and
// takes them back when the handler has returned: nothing of the body or the
// answer is used after the answer is written.
func lendBuffers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := callBufferPool.Get().(*callBuffers)
		defer func() {
			if cap(b.body) <= maxKeptBuffer && b.answer.Cap() <= maxKeptBuffer {
				callBufferPool.Put(b)
			}
		}()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callBuffersKey{}, b)))
	})
}

func borrowed(r *http.Request) *callBuffers {
	b, _ := r.Context().Value(callBuffersKey{}).(*callBuffers)
	return b
}

// bodyBuffer is an empty buffer of at least size bytes for the request's
// body: the borrowed one, if the call has one.
func bodyBuffer(r *http.Request, size int64) []byte {
	b := borrowed(r)
	if b == nil {
		return make([]byte, 0, size)
	}
	if int64(cap(b.body)) < size {
		b.body = make([]byte, 0, size)
	}
	return b.body[:0]
}

// encodeAnswer is json.Marshal of v followed by a newline (hook.Encode),
// in the call's borrowed answer buffer if it has one.
func encodeAnswer(r *http.Request, v any) ([]byte, error) {
	buf := new(bytes.Buffer)
	if b := borrowed(r); b != nil {
		buf = &b.answer
		buf.Reset()
	}
	if err := hook.Encode(buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
