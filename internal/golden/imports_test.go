package golden

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const importPath = "github.com/asya-sh/asya-sync/internal/golden"

// TestEveryTestPackageAcceptsUpdate keeps `go test ./... -update` working
// from the root: a test binary that does not link this package refuses the
// flag, and the whole command fails.
func TestEveryTestPackageAcceptsUpdate(t *testing.T) {
	importers := map[string]bool{} // directories with a test file importing it
	tested := map[string]bool{}    // directories with any test file
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		tested[dir] = true
		if importsGolden(t, path) {
			importers[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join("..", "..", "internal", "golden")
	for dir := range tested {
		if !importers[dir] && dir != self { // this package defines the flag
			t.Errorf("%s: no test file imports %s, so `go test ./... -update` fails there; "+
				"add _ %q to one of them", dir, importPath, importPath)
		}
	}
}

func importsGolden(t *testing.T, path string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
			return true
		}
	}
	return false
}
