// Package runtime holds the Python runtime script that every actor's
// asya-runtime container runs, and its hash.
package runtime

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
)

//go:embed asya_runtime.py
var embedded string

// Script is the runtime script shipped to every actor.
type Script struct {
	Source string // the script text
	Hash   string // hex-encoded SHA-256 of Source
}

// Embedded returns the runtime script built into the binary.
func Embedded() Script {
	return newScript(embedded)
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
	return newScript(string(b)), nil
}

func newScript(src string) Script {
	sum := sha256.Sum256([]byte(src))
	return Script{Source: src, Hash: hex.EncodeToString(sum[:])}
}
