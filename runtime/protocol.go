package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
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
//
// The import is matched line by line, and only on lines that name
// http.server: over a whole 15 KB script the expression took half as long
// as decoding a realistic sync request, and a sync whose pods keep their
// runtime reads a kept script's protocol every time. No match spans a line.
func SpeaksHTTP(src string) bool {
	for line := range strings.Lines(src) {
		if strings.Contains(line, "http.server") && httpServerImport.MatchString(line) {
			return true
		}
	}
	return false
}

var httpServerImport = regexp.MustCompile(`^[ \t]*(import[ \t]+http\.server|from[ \t]+http\.server[ \t]+import)\b`)

// httpFlag makes write-runtime write the HTTP script.
const httpFlag = "--http"

// WriteArgs are the arguments of asya-sync's write-runtime command that
// write the embedded script speaking HTTP, or frames, before the path to
// write it to.
func WriteArgs(http bool) []string {
	if http {
		return []string{"write-runtime", httpFlag}
	}
	return []string{"write-runtime"}
}

// ParseWriteArgs reads what follows write-runtime: the embedded script
// WriteArgs asks for, and the path.
func ParseWriteArgs(args []string) (Script, string, error) {
	script := Embedded()
	if len(args) == 2 && args[0] == httpFlag {
		script, args = EmbeddedHTTP(), args[1:]
	}
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return Script{}, "", fmt.Errorf("write-runtime takes the file to write, after %s for the HTTP runtime", httpFlag)
	}
	return script, args[0], nil
}
