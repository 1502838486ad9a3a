package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asya-sh/asya-sync/config"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

func TestWriteRuntimeWritesTheEmbeddedScript(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want asyaruntime.Script
	}{
		{nil, asyaruntime.Embedded()},
		{[]string{"--http"}, asyaruntime.EmbeddedHTTP()},
	} {
		path := filepath.Join(t.TempDir(), "asya_runtime.py")
		if err := runWriteRuntime(append(tc.args, path)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want.Source {
			t.Errorf("%v: wrote %d bytes that are not the embedded script", tc.args, len(got))
		}
		if info, _ := os.Stat(path); info.Mode().Perm() != 0o755 {
			t.Errorf("mode %v, want 0755", info.Mode().Perm())
		}
	}
	for _, bad := range [][]string{nil, {"--http"}, {"--ftp", "x"}} {
		if err := runWriteRuntime(bad); err == nil {
			t.Errorf("write-runtime %v: no error", bad)
		}
	}
}

func TestRuntimeScriptReplacement(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.py")
	if err := os.WriteFile(path, []byte("print('hi')\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ASYA_RUNTIME_SCRIPT_PATH", path)
	script, err := runtimeScript(&config.Config{RuntimeDelivery: asyaruntime.PodTemplate})
	if err != nil || script.Source != "print('hi')\n" {
		t.Errorf("podTemplate: script %q, error %v; want the replacement", script.Source, err)
	}
	_, err = runtimeScript(&config.Config{RuntimeDelivery: asyaruntime.InitContainer, RuntimeImage: "asya-sync:1"})
	if err == nil || !strings.Contains(err.Error(), "built into asya-sync:1") {
		t.Errorf("initContainer: error %v, want the replacement refused", err)
	}
}
