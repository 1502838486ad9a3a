// Package runtime holds the Python runtime script that every actor's
// asya-runtime container runs, and its hash.
//
// There is one script per Asya generation: Embedded speaks the 0.3
// sidecar's framed protocol, EmbeddedHTTP the HTTP protocol of the sidecar
// 0.5 and later. Each actor's ConfigMap carries one whole script, so each
// stays small, and a 0.3 actor's pods do not change when the other does.
package runtime

import (
	_ "embed"
	"fmt"
	"os"
)

//go:embed asya_runtime.py
var embedded string

//go:embed asya_runtime_http.py
var embeddedHTTP string

// Script is the runtime script shipped to every actor.
type Script struct {
	Source string // the script text
	Hash   string // hex-encoded SHA-256 of Source
	// HTTP: the script serves the sidecar HTTP (SpeaksHTTP), read once
	// when the script is made.
	HTTP bool
}

// Embedded returns the runtime script built into the binary.
func Embedded() Script {
	return NewScript(embedded)
}

// EmbeddedHTTP returns the runtime script of the current Asya generation
// (sidecar 0.5 and later: HTTP on the Unix socket) built into the binary.
func EmbeddedHTTP() Script {
	return NewScript(embeddedHTTP)
}

// Load reads the runtime script from path. An empty path means the embedded
// script. An empty file is rejected: shipping it would leave every actor
// without a runtime.
func Load(path string) (Script, error) {
	if path == "" {
		return Embedded(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("read runtime script %q: %w", path, err)
	}
	if len(b) == 0 {
		return Script{}, fmt.Errorf("runtime script %q is empty", path)
	}
	return NewScript(string(b)), nil
}

// NewScript is the script of source src.
func NewScript(src string) Script {
	return Script{Source: src, Hash: Hash(src), HTTP: SpeaksHTTP(src)}
}
