package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no configuration file may panic the parser, and what it
// accepts must be usable (every transport named, of a known type).
func FuzzParse(f *testing.F) {
	for _, path := range []string{"../examples/config.yaml", "../testdata/sync/config.yaml"} {
		data, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("error without a message")
			}
			return
		}
		for _, name := range cfg.TransportNames() {
			tr := cfg.Transports[name]
			if tr.Name != name {
				t.Fatalf("transport %q has name %q", name, tr.Name)
			}
			if tr.Kind == nil || kinds[tr.Kind.Type()] == nil {
				t.Fatalf("transport %q has no registered kind: %+v", name, tr)
			}
			_ = tr.SecretRefs()
		}
	})
}
