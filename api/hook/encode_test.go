package hook

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestEncodeAsEncodingJSON: Encode writes what encoding/json writes, for
// every golden answer and for the strings and numbers that encoders
// disagree on most often.
func TestEncodeAsEncodingJSON(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/*/*/response.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden answers: %v", err)
	}
	var values []any
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var resp Response
		var untyped any
		if err := json.Unmarshal(data, &resp); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := json.Unmarshal(data, &untyped); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		values = append(values, &resp, untyped)
	}
	values = append(values,
		map[string]any{"html": "<a href=\"x\">&</a>", "js": "\u2028\u2029", "control": "\x00\x01\x1f\x7f\t\n\r",
			"unicode": "é🙂\ufffd", "escapes": `\"/`},
		map[string]any{"ints": []any{int64(0), int64(-1), int64(math.MaxInt64), int32(65532)},
			"floats": []any{0.0, 1.5, 1e20, 1e21, 1e-6, 1e-7, -0.0, 123456789.125, math.MaxFloat64}},
		map[string]string{"error": "parent: json: cannot unmarshal <&>"},
		[]map[string]any{}, (*Response)(nil), map[string]any{"b": nil, "a": []any{}, "": map[string]any{}},
	)
	for i, v := range values {
		var want, got bytes.Buffer
		if err := json.NewEncoder(&want).Encode(v); err != nil {
			t.Fatal(err)
		}
		if err := Encode(&got, v); err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("value %d (%s) encodes as\n%s\nwant\n%s", i, paths[min(i/2, len(paths)-1)], got.Bytes(), want.Bytes())
		}
	}
	// Invalid UTF-8, which no answer holds (its strings come from decoded
	// JSON, which replaced it, and from the configuration), is written as
	// U+FFFD itself where encoding/json writes its escape: the same string.
	var got bytes.Buffer
	if err := Encode(&got, "a\xffb"); err != nil || got.String() != "\"a\ufffdb\"\n" {
		t.Errorf("invalid UTF-8 encodes as %q, %v", got.String(), err)
	}
}
