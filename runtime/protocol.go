package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// Hash is the hash of a script's source as Script carries it: the hex
// SHA-256, which the pod template's asya.sh/runtime-hash names.
func Hash(src string) string {
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:])
}

// SpeaksHTTP reports whether a runtime script serves the sidecar HTTP
// (asya_runtime_http.py, sidecar 0.5 and later) rather than
// length-prefixed frames (asya_runtime.py, sidecar 0.3): the HTTP runtime
// imports http.server, the framed one does not. A script the pods of an
// actor run is kept for them across an upgrade only when it speaks what
// the current script speaks (docs/upgrade.md).
func SpeaksHTTP(src string) bool { return httpServerImport.MatchString(src) }

var httpServerImport = regexp.MustCompile(`(?m)^[ \t]*(import[ \t]+http\.server|from[ \t]+http\.server[ \t]+import)\b`)
