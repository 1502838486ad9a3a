package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/asya-sh/asya-sync/internal/golden"
)

func TestRenderExample(t *testing.T) {
	var out bytes.Buffer
	if err := runRender([]string{"-f", "../../examples/hello-actor.yaml", "--config", "../../examples/config.yaml"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	// The script changes independently of render; pin it down by name only.
	text := out.String()
	for _, kind := range []string{"kind: ConfigMap", "kind: Deployment", "kind: ScaledObject"} {
		if !strings.Contains(text, kind) {
			t.Errorf("render output lacks %q", kind)
		}
	}
	// The example's handler ConfigMap is not an actor: render skips it.
	if got := len(regexp.MustCompile(`(?m)^---$`).FindAllString(text, -1)); got != 3 {
		t.Errorf("render printed %d documents, want 3", got)
	}
}

func TestRenderStream(t *testing.T) {
	dir := t.TempDir()
	stream := `apiVersion: asya.sh/v1alpha1
kind: AsyncActor
metadata: {name: a}
spec:
  transport: rabbitmq
  workload: {template: {spec: {containers: [{name: asya-runtime, image: python:3.12}]}}}
---
apiVersion: asya.sh/v1alpha1
kind: AsyncActor
metadata: {name: b, namespace: ml}
spec:
  transport: rabbitmq
  workload: {kind: StatefulSet, template: {spec: {containers: [{name: asya-runtime, image: python:3.12}]}}}
`
	path := filepath.Join(dir, "actors.yaml")
	if err := os.WriteFile(path, []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ASYA_RUNTIME_SCRIPT_PATH", writeFile(t, dir, "runtime.py", "# runtime\n"))
	var out bytes.Buffer
	if err := runRender([]string{"-f", path, "--config", "../../examples/config.yaml"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	golden.Bytes(t, "testdata/render-stream.yaml", out.Bytes())
}

// TestRenderFlavors: the stream's EnvironmentConfigs are merged into the
// actors that name them.
func TestRenderFlavors(t *testing.T) {
	stream := `apiVersion: apiextensions.crossplane.io/v1beta1
kind: EnvironmentConfig
metadata: {name: gpu}
data:
  nodeSelector: {accelerator: l4}
  env: [{name: A, value: "1"}]
---
apiVersion: asya.sh/v1alpha1
kind: AsyncActor
metadata: {name: a}
spec: {actor: a, image: x, handler: h.f, flavors: [gpu]}
`
	var out bytes.Buffer
	path := writeFile(t, t.TempDir(), "actors.yaml", stream)
	if err := runRender([]string{"-f", path, "--config", "../../examples/config.yaml"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"accelerator: l4", "name: A\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("render output lacks the flavor's %q:\n%s", want, out.String())
		}
	}
}

// TestRenderEveryExample: every example renders with the repository's
// service configuration, examples/config.yaml, as `make run` does.
func TestRenderEveryExample(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rendered := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^kind: AsyncActor$`).Match(data) {
			continue
		}
		rendered++
		t.Run(filepath.Base(path), func(t *testing.T) {
			var out bytes.Buffer
			if err := runRender([]string{"-f", path, "--config", "../../examples/config.yaml"}, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "kind: Deployment") {
				t.Errorf("render printed no Deployment:\n%s", out.String())
			}
		})
	}
	if rendered == 0 {
		t.Fatal("no example holds an AsyncActor")
	}
}

func TestRenderRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, doc, want string }{
		{"no runtime container", "apiVersion: asya.sh/v1alpha1\nkind: AsyncActor\nmetadata: {name: a}\nspec: {transport: rabbitmq, workload: {template: {spec: {containers: [{name: app, image: x}]}}}}\n",
			"exactly one container must be named asya-runtime"},
		{"unknown transport", "apiVersion: asya.sh/v1alpha1\nkind: AsyncActor\nmetadata: {name: a}\nspec: {transport: kafka, workload: {template: {spec: {containers: [{name: asya-runtime, image: x}]}}}}\n",
			`transport "kafka" is not configured`},
		{"env entries Metacontroller's apply would merge", "apiVersion: asya.sh/v1alpha1\nkind: AsyncActor\nmetadata: {name: a}\nspec: {transport: rabbitmq, workload: {template: {spec: {containers: [{name: asya-runtime, image: x, env: [{name: A}, {name: A, value: b}]}]}}}}\n",
			`share name "A"`},
		{"unknown field", "apiVersion: asya.sh/v1alpha1\nkind: AsyncActor\nmetadata: {name: a}\nspec: {transprt: rabbitmq}\n", `unknown field "transprt"`},
		{"only other kinds", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "no AsyncActor documents"},
		{"actor of another version", "apiVersion: asya.sh/v1\nkind: AsyncActor\nmetadata: {name: a}\n", `is asya.sh/v1 "AsyncActor", want asya.sh/v1alpha1 "AsyncActor"`},
		{"no name", "apiVersion: asya.sh/v1alpha1\nkind: AsyncActor\nspec: {transport: rabbitmq}\n", "no metadata.name"},
		{"empty", "", "no AsyncActor documents"},
		{"a flavor the stream lacks", "apiVersion: asya.sh/v1alpha1\nkind: AsyncActor\nmetadata: {name: a}\nspec: {actor: a, image: x, handler: h.f, flavors: [gpu]}\n",
			`no EnvironmentConfig "gpu"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, "actor.yaml", tt.doc)
			var out bytes.Buffer
			err := runRender([]string{"-f", path, "--config", "../../examples/config.yaml"}, &out, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("printed %d bytes for an invalid input, want nothing", out.Len())
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
