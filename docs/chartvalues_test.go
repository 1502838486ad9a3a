package docs

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// valuesTableMarker is the heading above chart/README.md's table of values.
const valuesTableMarker = "## Values\n"

// backticked is a `quoted` span of a table cell.
var backticked = regexp.MustCompile("`([^`]*)`")

// TestChartReadmeDocumentsEveryValue holds chart/README.md's table of
// values to the chart's schema and defaults: every key the schema declares
// is covered by a row (itself or a parent key: `config` covers the whole
// service configuration), every key a row names exists, and a row's
// default, where it is one literal per key, is values.yaml's.
func TestChartReadmeDocumentsEveryValue(t *testing.T) {
	rows := valuesTable(t)
	var schema schemaNode
	if err := json.Unmarshal([]byte(readDoc(t, "chart/values.schema.json")), &schema); err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal([]byte(readDoc(t, "chart/values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, r := range rows {
		for _, k := range r.keys {
			documented[k] = true
			if !schema.declares(k) {
				t.Errorf("chart/README.md documents %s, which values.schema.json does not declare", k)
			}
		}
	}
	for _, k := range schema.keys("") {
		// global is Helm's, for subcharts; the chart has none.
		if k != "global" && !coveredBy(k, documented) {
			t.Errorf("chart/README.md's values table has no row for %s (values.schema.json declares it)", k)
		}
	}
	for _, r := range rows {
		if len(r.defaults) != len(r.keys) {
			continue
		}
		for i, k := range r.keys {
			if want, ok := lookup(values, k); ok && r.defaults[i] != literal(want) {
				t.Errorf("chart/README.md gives %s the default `%s`; values.yaml has `%s`", k, r.defaults[i], literal(want))
			}
		}
	}
}

// valueRow is one row of the values table: the keys it names, and the
// defaults it gives when they are all quoted literals.
type valueRow struct {
	keys     []string
	defaults []string
}

// valuesTable reads the rows of chart/README.md's values table. A key
// written `.name` after `serviceAccount.create` is serviceAccount.name; a
// placeholder such as `<transport>` ends the key at its parent.
func valuesTable(t *testing.T) []valueRow {
	t.Helper()
	_, after, ok := strings.Cut(readDoc(t, "chart/README.md"), valuesTableMarker)
	if !ok {
		t.Fatalf("chart/README.md has no %q", strings.TrimSpace(valuesTableMarker))
	}
	var rows []valueRow
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		var r valueRow
		parent := ""
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			k := m[1]
			if strings.HasPrefix(k, ".") {
				k = parent + k
			}
			if i := strings.Index(k, ".<"); i >= 0 {
				k = k[:i]
			}
			parent = k[:max(strings.LastIndex(k, "."), 0)]
			r.keys = append(r.keys, k)
		}
		if d := strings.Split(cells[1], ", "); !slices.ContainsFunc(d, notQuoted) {
			for _, s := range d {
				r.defaults = append(r.defaults, strings.Trim(s, "`"))
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("chart/README.md's values table has no rows")
	}
	return rows
}

// notQuoted: a default cell's part is not one `literal`.
func notQuoted(s string) bool {
	return len(s) < 2 || s[0] != '`' || s[len(s)-1] != '`' || strings.Count(s, "`") != 2
}

// schemaNode is the part of a JSON schema that names keys.
type schemaNode struct {
	Properties           map[string]schemaNode `json:"properties"`
	AdditionalProperties json.RawMessage       `json:"additionalProperties"`
}

// keys are the dotted keys under prefix that a user sets: the leaves, and
// maps whose keys are the user's (additionalProperties a schema).
func (n schemaNode) keys(prefix string) []string {
	if len(n.Properties) == 0 || (len(n.AdditionalProperties) > 0 && string(n.AdditionalProperties) != "false") {
		return []string{prefix}
	}
	var out []string
	for name, p := range n.Properties {
		out = append(out, p.keys(strings.TrimPrefix(prefix+"."+name, "."))...)
	}
	slices.Sort(out)
	return out
}

// declares: the schema has the dotted key.
func (n schemaNode) declares(key string) bool {
	for _, part := range strings.Split(key, ".") {
		p, ok := n.Properties[part]
		if !ok {
			return false
		}
		n = p
	}
	return true
}

// coveredBy: key or one of its parents is documented.
func coveredBy(key string, documented map[string]bool) bool {
	for k := key; ; {
		if documented[k] {
			return true
		}
		i := strings.LastIndex(k, ".")
		if i < 0 {
			return false
		}
		k = k[:i]
	}
}

// lookup is the value at a dotted key of values.yaml.
func lookup(values map[string]any, key string) (any, bool) {
	var v any = values
	for _, part := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

// literal writes a default as the README quotes it.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return quoteEmpty(v)
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	default:
		return fmt.Sprint(v)
	}
}

// quoteEmpty: the README writes an empty string as "".
func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}
