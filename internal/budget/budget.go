// Package budget reads what asya-sync asks Metacontroller to watch, by
// service configuration, from the table docs/performance.md keeps (its
// "The budget"). Tests compare the customize answer, the children and
// the chart's CompositeController with it, so that a new related
// resource or child kind is a recorded decision.
package budget

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Marker is the line just above the table.
const Marker = "<!-- budget -->"

// Row is one configuration: the service configuration keys it sets (a
// YAML flow mapping laid over the defaults), the resources customize asks
// for, and the resources of the children.
type Row struct {
	Config            string
	Related, Children []string
}

// Read parses the table that follows Marker in the file at path; each row
// is | `configuration` | related resources | child resources |.
func Read(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []Row
	inTable := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == Marker:
			inTable = true
		case inTable && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 3 {
				return nil, fmt.Errorf("%s: budget row %q: want 3 cells", path, line)
			}
			rows = append(rows, Row{Config: strings.Trim(strings.TrimSpace(cells[0]), "`"),
				Related: words(cells[1]), Children: words(cells[2])})
		case inTable && len(rows) > 0 && !strings.HasPrefix(line, "|"):
			return rows, sc.Err()
		}
	}
	return rows, sc.Err()
}

// words is a cell's comma-separated list, sorted.
func words(cell string) []string {
	var out []string
	for _, w := range strings.Split(cell, ",") {
		if w = strings.TrimSpace(w); w != "" && w != "none" {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}
