// Package docs holds tests of the documents themselves: figures that must
// come from one place, so that a document that drifts fails the build.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

// root is the repository, seen from this directory.
const root = ".."

// howLongMarker is the line above docs/testing.md's table of build and run
// times, the one place that states them.
const howLongMarker = "<!-- how-long -->"

var (
	// duration is a time span as the documents write one: "491 s",
	// "35–51 s", "about 2 min 30 s", "5 to 11 minutes".
	duration = regexp.MustCompile(`\b\d+(?:[.,]\d+)?(?:\s*(?:to|–|-)\s*\d+(?:[.,]\d+)?)?\s*(?:s|seconds?|min|minutes?|h|hours?)\b`)
	// timeTopic marks a sentence about how long building or running the
	// tests takes.
	timeTopic = regexp.MustCompile(`(?i)\bcold\b|\bwarm\b|\.ci/run\b|make (?:test|e2e)\b|\.ci/e2e\.sh (?:tools|node)\b|\bfirst build\b|\bbuilds? (?:the|in|takes?|took)\b|\b(?:api|node|e2e|unit|whole) tier\b`)
	// sentenceEnd splits a paragraph into sentences.
	sentenceEnd = regexp.MustCompile(`[.;]\s+`)
)

// TestBuildTimesInOnePlace: build and test-run times are stated only in
// docs/testing.md's "How long" table (and the cold total worked out from
// it, which must add up); every other document links there.
func TestBuildTimesInOnePlace(t *testing.T) {
	table, rest := cutTable(t, readDoc(t, "docs/testing.md"), howLongMarker)
	checkColdTotal(t, table, rest)

	for _, file := range documents(t) {
		text := readDoc(t, file)
		if file == "docs/testing.md" {
			text = rest
		}
		for _, s := range sentences(text) {
			if file == "docs/testing.md" && coldTotal.MatchString(s) {
				continue
			}
			if d := duration.FindString(s); d != "" && timeTopic.MatchString(s) {
				t.Errorf("%s quotes a build or test time (%q in %q): state it in docs/testing.md#how-long and link there", file, d, clip(s))
			}
		}
	}
}

// coldTotal is the sentence that adds the table up.
var coldTotal = regexp.MustCompile("A cold `\\.ci/run` is the cold builds plus a warm run, (\\d+)–(\\d+) s")

// checkColdTotal: the cold total is the sum of the cold build rows and
// the warm .ci/run row.
func checkColdTotal(t *testing.T, table []string, rest string) {
	t.Helper()
	var lo, hi float64
	var builds, run int
	for _, row := range table {
		cells := strings.Split(strings.Trim(row, "|"), "|")
		if len(cells) != 3 {
			continue
		}
		what, cmd, took := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		switch {
		case strings.HasPrefix(what, "build: "):
			builds++
		case cmd == "`bash .ci/run`":
			run++
		default:
			continue
		}
		a, b, ok := secondsRange(took)
		if !ok {
			t.Errorf("docs/testing.md: %q: time %q is not in seconds", what, took)
		}
		lo, hi = lo+a, hi+b
	}
	if builds == 0 || run != 1 {
		t.Fatalf("docs/testing.md#how-long: %d build rows and %d .ci/run rows, want some and one", builds, run)
	}
	m := coldTotal.FindStringSubmatch(strings.Join(strings.Fields(rest), " "))
	if m == nil {
		t.Fatalf("docs/testing.md: no sentence matching %s", coldTotal)
	}
	if m[1] != strconv.Itoa(int(lo)) || m[2] != strconv.Itoa(int(hi)) {
		t.Errorf("docs/testing.md: a cold .ci/run is %s–%s s by its sentence, %d–%d s by the table", m[1], m[2], int(lo), int(hi))
	}
}

// secondsRange reads "491 s" or "35–51 s".
func secondsRange(cell string) (lo, hi float64, ok bool) {
	m := regexp.MustCompile(`^(\d+)(?:–(\d+))? s$`).FindStringSubmatch(cell)
	if m == nil {
		return 0, 0, false
	}
	lo, _ = strconv.ParseFloat(m[1], 64)
	hi = lo
	if m[2] != "" {
		hi, _ = strconv.ParseFloat(m[2], 64)
	}
	return lo, hi, true
}

// documents are the repository's Markdown files, the CI scripts, the
// Makefile and the example values: what a reader or a log shows.
func documents(t *testing.T) []string {
	return repoFiles(t, func(rel string) bool {
		return strings.HasSuffix(rel, ".md") || strings.HasPrefix(rel, ".ci/") || rel == "Makefile" ||
			(strings.HasPrefix(rel, "examples/") && strings.HasSuffix(rel, ".yaml"))
	})
}

// repoFiles are the repository's files (slash-separated, relative to its
// root) that keep says to, outside VCS, caches and test data.
func repoFiles(t *testing.T, keep func(rel string) bool) []string {
	t.Helper()
	return filesUnder(t, root, keep)
}

// filesUnder is repoFiles of the tree at dir.
func filesUnder(t *testing.T, dir string, keep func(rel string) bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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
		rel, _ := filepath.Rel(dir, path)
		if rel = filepath.ToSlash(rel); keep(rel) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// cutTable returns the table rows that follow marker, and the text
// without them.
func cutTable(t *testing.T, text, marker string) (rows []string, rest string) {
	t.Helper()
	before, after, ok := strings.Cut(text, marker+"\n")
	if !ok {
		t.Fatalf("no %s", marker)
	}
	lines := strings.Split(after, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "|") {
		i++
	}
	return lines[:i], before + strings.Join(lines[i:], "\n")
}

// sentences splits text into paragraphs (table rows are paragraphs of
// their own) and those into sentences, whitespace folded.
func sentences(text string) []string {
	var out []string
	for _, para := range regexp.MustCompile(`\n\s*\n|\n(?:\|)`).Split(text, -1) {
		for _, s := range sentenceEnd.Split(strings.Join(strings.Fields(para), " "), -1) {
			if s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// figure is a measured quantity or ratio as docs/performance.md writes
// one, or a chain of them sharing a unit: "0.893 ms", "51–52 MB",
// "3.4 to 4.9 s", "195 → 235 → 260 syncs/s", "184,427 bytes", "1.85×".
var figure = regexp.MustCompile(`(?:^|[^\w.+-])(\d[\d,]*(?:\.\d+)?(?:\s*(?:–|to|→|and)\s*\d[\d,]*(?:\.\d+)?)*)\s*(ms|µs|s|MB|KB|bytes|syncs/s|×)(?:\W|$)`)

var number = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)

// settings are figures of docs/performance.md's prose that are not
// measurements, so no table holds them: what was configured or asked.
var settings = []string{
	"every 60 s with the chart's", // resyncPeriodSeconds, checked by sync's TestSteadyResyncBrokerCalls
	"reused for 30 s",             // transport.CountsTTL, checked there too
	"10 s per run",                // how long each A/B run lasted
	"idle for 2 s",                // the fleet test's settle rule
	"(5 s, 5 s, 10 s, 20 s, ...)", // the status's backoff
	"(`--profiling`, 2 s)",        // the profile's length
	"the issue's 12.7 s",          // the target's own figure
}

// TestPerformanceFiguresComeFromTables: every measured figure the prose
// of docs/performance.md quotes is one of its tables' (to the precision
// quoted), so no figure stands without the measurement it comes from.
func TestPerformanceFiguresComeFromTables(t *testing.T) {
	table, prose := splitTables(readDoc(t, "docs/performance.md"))
	values := tableValues(table)
	if len(values) == 0 {
		t.Fatal("docs/performance.md has no tables")
	}
	folded := strings.Join(strings.Fields(strings.Join(prose, "\n")), " ")
	for _, s := range settings {
		if !strings.Contains(folded, s) {
			t.Errorf("setting %q is no longer in docs/performance.md: drop it from the list", s)
		}
		folded = strings.ReplaceAll(folded, s, "")
	}
	for _, m := range figure.FindAllStringSubmatchIndex(folded, -1) {
		chain, unit := folded[m[2]:m[3]], folded[m[4]:m[5]]
		for _, n := range number.FindAllString(chain, -1) {
			if !inTables(n, unit, values) {
				t.Errorf("docs/performance.md quotes %s %s, which no table holds: %q", n, unit, clip(folded[max(0, m[0]-80):m[1]]))
			}
		}
	}
}

// measured marks a sentence that reports a measurement rather than a
// setting: "200 actors took 236 s to converge", "costs about 0.1 ms".
var measured = regexp.MustCompile(`(?i)\b(?:took|measured|converge[sd]?|converging|costs?|lasted|throughput|p50|p99|median|faster|slower)\b`)

// TestMeasuredFiguresComeFromTables: outside docs/performance.md (which
// TestPerformanceFiguresComeFromTables holds to its own tables), a
// sentence of any document, or of the chart's values.yaml, that reports a
// measured figure quotes one of docs/performance.md's tables or of a table
// of its own document; better, it links to the table. Build and test
// times are TestBuildTimesInOnePlace's.
func TestMeasuredFiguresComeFromTables(t *testing.T) {
	perf, _ := splitTables(readDoc(t, "docs/performance.md"))
	files := append(documents(t), "chart/values.yaml")
	checked := 0
	for _, file := range files {
		if file == "docs/performance.md" {
			continue
		}
		tables, prose := splitTables(readDoc(t, file))
		values := append(tableValues(perf), tableValues(tables)...)
		for _, s := range sentences(strings.Join(prose, "\n")) {
			if !measured.MatchString(s) || (duration.MatchString(s) && timeTopic.MatchString(s)) || coldTotal.MatchString(s) {
				continue
			}
			for _, m := range figure.FindAllStringSubmatchIndex(s, -1) {
				chain, unit := s[m[2]:m[3]], s[m[4]:m[5]]
				for _, n := range number.FindAllString(chain, -1) {
					checked++
					if !inTables(n, unit, values) {
						t.Errorf("%s quotes %s %s as measured, which no table holds (docs/performance.md's, or its own): %q; link to the table instead",
							file, n, unit, clip(s))
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no measured figure found outside docs/performance.md: the patterns no longer match the documents")
	}
}

// splitTables parts a document into its table rows and its prose, code
// blocks left out of both.
func splitTables(text string) (table, prose []string) {
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "```"):
			inCode = !inCode
		case inCode:
		case strings.HasPrefix(strings.TrimSpace(line), "|"):
			table = append(table, line)
		default:
			prose = append(prose, line)
		}
	}
	return table, prose
}

// tableValues are the numbers of the table rows.
func tableValues(rows []string) []tableValue {
	var values []tableValue
	for _, row := range rows {
		for _, m := range tableFigure.FindAllStringSubmatch(row, -1) {
			values = append(values, tableValue{m[1], m[2]})
		}
	}
	return values
}

// tableValue is a number in a table cell, with the unit written after it
// if any (a column of bare numbers names its unit in the header).
type tableValue struct{ number, unit string }

var tableFigure = regexp.MustCompile(`(\d[\d,]*(?:\.\d+)?)(?:\s*(ms|µs|s|MB|KB|bytes|syncs/s|×)(?:\W|$))?`)

// inTables: some table value of that unit (or of none), rounded to the
// precision of quoted, is it.
func inTables(quoted, unit string, values []tableValue) bool {
	q := strings.ReplaceAll(quoted, ",", "")
	decimals := 0
	if _, frac, ok := strings.Cut(q, "."); ok {
		decimals = len(frac)
	}
	want, err := strconv.ParseFloat(q, 64)
	if err != nil {
		return false
	}
	for _, v := range values {
		if v.unit != "" && v.unit != unit {
			continue
		}
		x, err := strconv.ParseFloat(strings.ReplaceAll(v.number, ",", ""), 64)
		if err == nil && strconv.FormatFloat(x, 'f', decimals, 64) == strconv.FormatFloat(want, 'f', decimals, 64) {
			return true
		}
	}
	return false
}
