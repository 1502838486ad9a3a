package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/config"
)

// chartCase is one case of testdata/chart-values.yaml, which describes the
// fields.
type chartCase struct {
	Name     string         `json:"name"`
	Files    []string       `json:"files"`
	Values   map[string]any `json:"values"`
	Refused  string         `json:"refused"`
	Template bool           `json:"template"`
	Loader   string         `json:"loader"`
	Stricter string         `json:"stricter"`
}

// TestChartSchemaAgreesWithLoader validates each case's values against the
// chart's values.schema.json, with the validator Helm runs on it, and feeds
// the configuration the chart renders from them to config.Parse: the
// schema refuses what the service would refuse at startup, and nothing
// else but the cases marked stricter, and both name the same key. The
// rules the schema cannot express are the templates'; there the schema
// accepts, the service refuses, and e2e/api/chart_test.go renders the same
// cases with helm template.
func TestChartSchemaAgreesWithLoader(t *testing.T) {
	schema := compileChartSchema(t)
	defaults := readValues(t, "../chart/values.yaml")
	var file struct {
		Base  map[string]any `json:"base"`
		Cases []chartCase    `json:"cases"`
	}
	data, err := os.ReadFile("testdata/chart-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		t.Fatal(err)
	}
	// Every key of the sidecar's SecurityContext, so that the schema's list
	// of them cannot fall behind the Kubernetes API the service decodes.
	file.Cases = append(file.Cases, chartCase{
		Name:   "sidecarSecurityContext with every key",
		Values: map[string]any{"config": map[string]any{"sidecarSecurityContext": everyField(reflect.TypeFor[corev1.SecurityContext]())}},
	})

	for _, tc := range file.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			user := file.Base
			for _, f := range tc.Files {
				user = mergeValues(user, readValues(t, filepath.Join("..", f)))
			}
			user = mergeValues(user, tc.Values)
			values := coalesceValues(user, defaults)

			schemaErr := schema.Validate(values)
			_, loadErr := config.Parse(renderConfig(t, values))

			schemaRefuses := tc.Refused != "" && !tc.Template
			loaderRefuses := tc.Refused != "" && tc.Stricter == ""
			switch {
			case schemaRefuses && schemaErr == nil:
				t.Errorf("the schema accepts the values; want it to refuse %s", tc.Refused)
			case schemaRefuses && !namesKey(schemaKeys(schemaErr), tc.Refused):
				t.Errorf("the schema refuses the values naming %v, not %s:\n%v", schemaKeys(schemaErr), tc.Refused, schemaErr)
			case !schemaRefuses && schemaErr != nil:
				t.Errorf("the schema refuses the values: %v", schemaErr)
			}
			loaderKey := strings.TrimPrefix(tc.Refused, "config.")
			if tc.Loader != "" {
				loaderKey = tc.Loader
			}
			switch {
			case loaderRefuses && loadErr == nil:
				t.Errorf("config.Parse accepts the chart's configuration; want it to refuse %s", tc.Refused)
			case loaderRefuses && !strings.Contains(loadErr.Error(), loaderKey):
				t.Errorf("config.Parse refuses the chart's configuration naming no %s: %v", loaderKey, loadErr)
			case !loaderRefuses && loadErr != nil:
				t.Errorf("config.Parse refuses the chart's configuration: %v", loadErr)
			}
		})
	}
}

// compileChartSchema compiles values.schema.json as Helm does
// (chartutil.ValidateAgainstSingleSchema).
func compileChartSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile("../chart/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file:///values.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("file:///values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readValues reads a values file as Helm does (sigs.k8s.io/yaml).
func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// mergeValues layers b over a as Helm layers -f files: maps are merged,
// anything else in b, null included, replaces what a has.
func mergeValues(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// coalesceValues layers the user's values over the chart's defaults as
// Helm does: maps are merged, and a null removes the key the defaults set.
func coalesceValues(user, defaults map[string]any) map[string]any {
	out := make(map[string]any, len(user))
	for k, v := range user {
		out[k] = v
	}
	for k, dv := range defaults {
		uv, ok := out[k]
		switch {
		case !ok:
			out[k] = dv
		case uv == nil && dv != nil:
			delete(out, k)
		default:
			um, uok := uv.(map[string]any)
			dm, dok := dv.(map[string]any)
			if uok && dok {
				out[k] = coalesceValues(um, dm)
			}
		}
	}
	return out
}

// renderConfig is the config.yaml of chart/templates/configmap.yaml: the
// values' config, with runtimeImage defaulted to the release's image for
// runtimeDelivery initContainer.
func renderConfig(t *testing.T, values map[string]any) []byte {
	t.Helper()
	cfg, _ := values["config"].(map[string]any)
	if image, _ := cfg["runtimeImage"].(string); cfg["runtimeDelivery"] == "initContainer" && image == "" {
		cfg = mergeValues(cfg, map[string]any{"runtimeImage": "ghcr.io/asya-sh/asya-sync:test"})
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// schemaKeys lists the values keys a validation error names, dotted: the
// location of each innermost error, and under it the property that is
// missing or not allowed.
func schemaKeys(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var keys []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		for _, c := range e.Causes {
			walk(c)
		}
		if len(e.Causes) > 0 {
			return
		}
		at := strings.Join(e.InstanceLocation, ".")
		var under []string
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			under = k.Missing
		case *kind.AdditionalProperties:
			under = k.Properties
		default:
			keys = append(keys, at)
		}
		for _, p := range under {
			keys = append(keys, at+"."+p)
		}
	}
	walk(ve)
	return keys
}

// namesKey reports whether one of keys is key or below it.
func namesKey(keys []string, key string) bool {
	for _, k := range keys {
		if k == key || strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// everyField is a value of t, as decoded from JSON, with every field set.
func everyField(t reflect.Type) any {
	switch t.Kind() {
	case reflect.Pointer:
		return everyField(t.Elem())
	case reflect.Struct:
		m := map[string]any{}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			m[name] = everyField(f.Type)
		}
		return m
	case reflect.Slice:
		return []any{everyField(t.Elem())}
	case reflect.String:
		return "x"
	case reflect.Bool:
		return true
	case reflect.Int, reflect.Int32, reflect.Int64:
		return 1.0
	}
	panic("everyField: no value for " + t.String())
}
