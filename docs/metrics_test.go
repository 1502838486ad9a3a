package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// metricName is a metric of the service as a document, a rule or a
// query writes it.
var metricName = regexp.MustCompile(`\basya_sync_[a-z0-9_]*[a-z0-9]`)

// metricsTable is the header of README.md's table of metrics.
const metricsTable = "| metric | type | labels | meaning |"

// TestMetricsTable: README.md's table of metrics lists every metric the
// code registers and no other, and every metric that a document (its
// commands, queries and prose), the chart's alerts or its dashboard
// names; a histogram's series (_bucket, _sum, _count) count as the
// histogram.
func TestMetricsTable(t *testing.T) {
	table := metricsInTable(t)
	registered := registeredMetrics(t)
	if len(registered) < 5 {
		t.Fatalf("found %d registered metrics: the code's registrations no longer read as expected", len(registered))
	}
	for _, name := range sortedKeys(registered) {
		if !table[name] {
			t.Errorf("README.md's table of metrics lacks %s, which %s registers", name, registered[name])
		}
	}
	for _, name := range sortedKeys(table) {
		if registered[name] == "" {
			t.Errorf("README.md's table of metrics lists %s, which no code registers", name)
		}
	}
	users := []string{"chart/files/alerts.yaml", "chart/files/dashboard.json"}
	for _, file := range documents(t) {
		if strings.HasSuffix(file, ".md") {
			users = append(users, file)
		}
	}
	for _, file := range users {
		seen := map[string]bool{}
		for _, name := range metricName.FindAllString(readDoc(t, file), -1) {
			if !seen[name] && !table[name] && !table[histogramOf(name)] {
				t.Errorf("%s names %s, which README.md's table of metrics does not list", file, name)
			}
			seen[name] = true
		}
	}
}

// histogramOf is the histogram a series belongs to: the name without
// _bucket, _sum or _count.
func histogramOf(series string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok {
			return base
		}
	}
	return series
}

// metricsInTable are the first cells of README.md's table of metrics.
func metricsInTable(t *testing.T) map[string]bool {
	t.Helper()
	_, after, ok := strings.Cut(readDoc(t, "README.md"), "\n"+metricsTable+"\n")
	if !ok {
		t.Fatalf("README.md: no table headed %q", metricsTable)
	}
	names := map[string]bool{}
	for _, row := range strings.Split(after, "\n") {
		if !strings.HasPrefix(row, "|") {
			break
		}
		cell := strings.TrimSpace(strings.Split(row, "|")[1])
		if strings.Trim(cell, "-") == "" {
			continue
		}
		name := strings.Trim(cell, "`")
		if !metricName.MatchString(name) || metricName.FindString(name) != name {
			t.Errorf("README.md's table of metrics: %q is not a metric name", cell)
			continue
		}
		names[name] = true
	}
	return names
}

// prometheusOpts are the client library's option types whose Name is a
// metric's name.
var prometheusOpts = map[string]bool{"CounterOpts": true, "GaugeOpts": true, "HistogramOpts": true, "SummaryOpts": true}

// registeredMetrics are the metrics the code (not its tests) defines with
// the Prometheus client, by name, each with the file it is defined in:
// the Name of a CounterOpts, GaugeOpts, HistogramOpts or SummaryOpts, and
// the name given to prometheus.NewDesc.
func registeredMetrics(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".cache", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		record := func(at ast.Node, e ast.Expr) {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: a metric named by %T, not a string literal: this test cannot read it", fset.Position(at.Pos()), e)
				return
			}
			name, _ := strconv.Unquote(lit.Value)
			out[name] = filepath.ToSlash(rel)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && isPackage(sel.X, "prometheus") && prometheusOpts[sel.Sel.Name] {
					for _, elt := range n.Elts {
						if kv, ok := elt.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Name") {
							record(n, kv.Value)
						}
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && isPackage(sel.X, "prometheus") && sel.Sel.Name == "NewDesc" && len(n.Args) > 0 {
					record(n, n.Args[0])
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isPackage(e ast.Expr, name string) bool { return isIdent(e, name) }

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
