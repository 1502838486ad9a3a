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
	path := filepath.Join(t.TempDir(), "asya_runtime.py")
	if err := runWriteRuntime([]string{path}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != asyaruntime.Embedded().Source {
		t.Errorf("wrote %d bytes that are not the embedded script", len(got))
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", info.Mode().Perm())
	}
	if err := runWriteRuntime(nil); err == nil {
		t.Error("write-runtime without a path: no error")
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
