package v1alpha1

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"sigs.k8s.io/yaml"
)

// crdFile is the CRD controller-gen writes from types.go's markers.
const crdFile = "../../manifests/crd/asya.sh_asyncactors.yaml"

// openAPISchema is the part of an OpenAPI schema these tests read.
type openAPISchema struct {
	Type        string                   `json:"type"`
	Properties  map[string]openAPISchema `json:"properties"`
	Validations []struct {
		Rule    string `json:"rule"`
		Message string `json:"message"`
	} `json:"x-kubernetes-validations"`
}

// TestCRDRulesAgreeWithShapeOf: the shape rule is written twice, as
// ShapeOf's lists for the hook and as the CRD's CEL rules for admission.
// For every field the CRD's spec schema has, at any depth, a valid spec
// of each shape that also carries that field is admitted by the CRD's
// rules on spec, evaluated with CEL, exactly when ShapeOf accepts it, and
// then ShapeOf tells the shape of the spec it was added to.
func TestCRDRulesAgreeWithShapeOf(t *testing.T) {
	spec := crdSpecSchema(t)
	rules := compileRules(t, spec)
	paths := fieldPaths(spec, "")
	for _, want := range []string{"workload", "actor", "compositionRef", "scaling.minReplicaCount", "scaling.advanced.triggers"} {
		if _, ok := paths[want]; !ok {
			t.Fatalf("the CRD's spec schema has no %s: the schema no longer reads as expected (fields %v)", want, slices.Sorted(maps.Keys(paths)))
		}
	}
	t.Logf("%d fields of the CRD's spec, each added to a spec of each shape", len(paths))
	bases := []struct {
		shape Generation
		spec  string
	}{
		{Nested, `{"transport":"mq","workload":{"template":{"spec":{}}}}`},
		{Flat, `{"actor":"a","image":"i","handler":"m.f"}`},
	}
	for _, base := range bases {
		for _, path := range slices.Sorted(maps.Keys(paths)) {
			var s map[string]any
			if err := json.Unmarshal([]byte(base.spec), &s); err != nil {
				t.Fatal(err)
			}
			set(s, path, paths[path])
			refused := rules.refuse(t, s)
			raw, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			gen, err := ShapeOf(raw)
			switch {
			case err != nil && len(refused) == 0:
				t.Errorf("%s spec with %s: the CRD admits it, ShapeOf refuses it: %v", base.shape, path, err)
			case err == nil && len(refused) > 0:
				t.Errorf("%s spec with %s: ShapeOf accepts it, the CRD refuses it: %q", base.shape, path, refused)
			case err == nil && gen != base.shape:
				t.Errorf("%s spec with %s: ShapeOf says %s", base.shape, path, gen)
			}
		}
	}
}

func crdSpecSchema(t *testing.T) openAPISchema {
	t.Helper()
	data, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema openAPISchema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%s has %d versions, want 1", crdFile, len(crd.Spec.Versions))
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
}

// celRules are the CRD's rules on spec, compiled.
type celRules []struct {
	message string
	program cel.Program
}

func compileRules(t *testing.T, spec openAPISchema) celRules {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	var out celRules
	for _, v := range spec.Validations {
		ast, issues := env.Compile(v.Rule)
		if issues.Err() != nil {
			t.Fatalf("rule %q: %v", v.Rule, issues.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatalf("rule %q: %v", v.Rule, err)
		}
		out = append(out, struct {
			message string
			program cel.Program
		}{v.Message, prg})
	}
	if len(out) < 2 {
		t.Fatalf("%s has %d rules on spec: the schema no longer reads as expected", crdFile, len(out))
	}
	return out
}

// refuse evaluates the rules on spec as the API server would and returns
// the messages of those that refuse it. A rule that fails to evaluate
// (it reads a field it did not check with has()) would refuse every
// such object: the test fails.
func (rules celRules) refuse(t *testing.T, spec map[string]any) []string {
	t.Helper()
	var refused []string
	for _, r := range rules {
		out, _, err := r.program.Eval(map[string]any{"self": spec})
		if err != nil {
			t.Fatalf("the rule %q does not evaluate on %v: %v", r.message, spec, err)
		}
		if out.Value() != true {
			refused = append(refused, r.message)
		}
	}
	return refused
}

// fieldPaths are the dotted paths of s's properties, at every depth, each
// with a value of its type; a list or an open object is a leaf.
func fieldPaths(s openAPISchema, prefix string) map[string]any {
	out := map[string]any{}
	for name, p := range s.Properties {
		path := prefix + name
		out[path] = valueOf(p.Type)
		maps.Copy(out, fieldPaths(p, path+"."))
	}
	return out
}

func valueOf(typ string) any {
	switch typ {
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return true
	}
	return "x"
}

// set writes v at path in m, making the objects on the way; an object
// already there is kept, with what it holds.
func set(m map[string]any, path string, v any) {
	head, rest, deeper := strings.Cut(path, ".")
	if !deeper {
		_, have := m[head].(map[string]any)
		if _, object := v.(map[string]any); !have || !object {
			m[head] = v
		}
		return
	}
	next, ok := m[head].(map[string]any)
	if !ok {
		next = map[string]any{}
		m[head] = next
	}
	set(next, rest, v)
}
