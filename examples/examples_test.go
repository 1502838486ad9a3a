// Package examples holds no code: its test checks that every example
// actor's handler ships with it and imports.
package examples

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/internal/testenv"
)

// doc is one YAML document of an example file, decoded loosely.
type doc struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
	Spec struct {
		// The flat shape.
		Handler      string   `json:"handler"`
		Env          []envVar `json:"env"`
		Volumes      []volume `json:"volumes"`
		VolumeMounts []mount  `json:"volumeMounts"`
		// The 0.3 shape.
		Workload struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name         string   `json:"name"`
						Env          []envVar `json:"env"`
						VolumeMounts []mount  `json:"volumeMounts"`
					} `json:"containers"`
					Volumes []volume `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"workload"`
	} `json:"spec"`
}

type envVar struct{ Name, Value string }
type mount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
}
type volume struct {
	Name      string `json:"name"`
	ConfigMap *struct {
		Name string `json:"name"`
	} `json:"configMap"`
}

// runtime is what an actor gives its runtime container, in either shape.
type runtime struct {
	handler    string
	pythonPath []string
	mounts     []mount
	volumes    []volume
}

func (d doc) runtime() runtime {
	s := d.Spec
	r := runtime{handler: s.Handler, mounts: s.VolumeMounts, volumes: s.Volumes}
	env := s.Env
	for _, c := range s.Workload.Template.Spec.Containers {
		if c.Name == "asya-runtime" {
			env, r.mounts, r.volumes = c.Env, c.VolumeMounts, s.Workload.Template.Spec.Volumes
		}
	}
	for _, e := range env {
		switch e.Name {
		case "ASYA_HANDLER":
			r.handler = e.Value
		case "PYTHONPATH":
			r.pythonPath = strings.Split(e.Value, ":")
		}
	}
	return r
}

// handlerTree lays out, in dir, the files the actor's pods see on their
// PYTHONPATH from the example's own ConfigMaps, and returns the
// PYTHONPATH to import the handler with.
func (r runtime) handlerTree(t *testing.T, configMaps map[string]doc, dir string) string {
	t.Helper()
	var paths []string
	for _, m := range r.mounts {
		if !slices.Contains(r.pythonPath, m.MountPath) {
			continue
		}
		for _, v := range r.volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm, ok := configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("volume %s names ConfigMap %s, which the example does not ship", v.Name, v.ConfigMap.Name)
			}
			root := filepath.Join(dir, m.Name)
			for file, text := range cm.Data {
				writeFile(t, filepath.Join(root, file), text)
			}
			paths = append(paths, root)
		}
	}
	return strings.Join(paths, ":")
}

// TestExampleHandlersShip: every actor of examples/ names a handler whose
// module ships in a ConfigMap of the same file, mounted on the runtime's
// PYTHONPATH, and the function imports and is callable there.
func TestExampleHandlersShip(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3", err)
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	actors := 0
	for _, file := range files {
		docs := readDocs(t, file)
		configMaps := map[string]doc{}
		for _, d := range docs {
			if d.Kind == "ConfigMap" {
				configMaps[d.Metadata.Name] = d
			}
		}
		for _, d := range docs {
			if d.Kind != "AsyncActor" {
				continue
			}
			actors++
			t.Run(file+"/"+d.Metadata.Name, func(t *testing.T) {
				r := d.runtime()
				module, fn, ok := cut(r.handler)
				if !ok {
					t.Fatalf("handler %q is not module.function", r.handler)
				}
				path := r.handlerTree(t, configMaps, t.TempDir())
				if path == "" {
					t.Fatalf("no ConfigMap of %s is mounted on the runtime's PYTHONPATH %v", file, r.pythonPath)
				}
				cmd := exec.Command(python, "-I", "-c",
					"import sys, importlib; sys.path[:0] = sys.argv[1].split(':'); "+
						"f = getattr(importlib.import_module(sys.argv[2]), sys.argv[3]); assert callable(f), f",
					path, module, fn)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("handler %s does not import from the example's ConfigMaps: %v\n%s", r.handler, err, out)
				}
			})
		}
	}
	if actors == 0 {
		t.Fatal("no AsyncActor in examples/")
	}
}

// cut splits module.function; a handler module.Class.method imports the
// module before the last two names.
func cut(handler string) (module, fn string, ok bool) {
	i := strings.LastIndex(handler, ".")
	if i <= 0 || i == len(handler)-1 {
		return "", "", false
	}
	return handler[:i], handler[i+1:], true
}

func readDocs(t *testing.T, file string) []doc {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var docs []doc
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var d doc
		if err := yaml.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if d.Kind != "" {
			docs = append(docs, d)
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
