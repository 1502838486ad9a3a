package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	// mdLink is a Markdown link or image: its target, without a title.
	mdLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	// sectionRef is a document's section named by anchor in any text, a
	// code comment's "docs/design.md#queues" as much as a link.
	sectionRef = regexp.MustCompile(`(?:^|[^\w./:-])((?:\.\./|\./)*(?:[\w.-]+/)*[\w.-]+\.md)#([\w-]+)`)
	// titleRef is a document's section named by title, as the chart's
	// messages and the tests' skip reasons write it:
	// docs/install.md, "GitOps (Argo CD, Flux)".
	titleRef = regexp.MustCompile(`((?:[\w.-]+/)*[\w.-]+\.md), \\?"([^"\\]+)\\?"`)
	// pathRef is a Markdown file named by its path, in any text.
	pathRef = regexp.MustCompile(`(?:^|[^\w./:-])((?:\.\./)*[\w.-]+(?:/[\w.-]+)*/[\w.-]+\.md)\b`)
	// url is a web address, whose paths are not the repository's.
	url = regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://\S+|//[\w.-]+\.[a-z]{2,}/\S*`)
	// inlineCode is a Markdown code span.
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	// htmlAnchor is an anchor a document sets by hand.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	// commentBreak is a line break inside a comment, with the next line's
	// comment marker.
	commentBreak = regexp.MustCompile(`\s*\n\s*(?:#|//)?\s*`)
)

// TestLinksResolve: every link between the repository's documents lands
// where it points. A Markdown link's file exists, and its #anchor is a
// heading of that file (as GitHub makes anchors). Any text file (a code
// comment, a chart message, a values file) that names a document's
// section, by anchor (docs/design.md#queues) or by title
// (docs/install.md, "GitOps (Argo CD, Flux)"), names one that exists, and
// a Markdown file named by its path exists. A pointer only says where to
// look, not what is there: a procedure a document promises must be a
// section that one can link to, so that this test holds it.
func TestLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{} // by file, from root
	titles := map[string]map[string]bool{}
	sections := func(file string) (map[string]bool, map[string]bool, bool) {
		if a, ok := anchors[file]; ok {
			return a, titles[file], true
		}
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, nil, false
		}
		a, ti := headings(string(data))
		anchors[file], titles[file] = a, ti
		return a, ti, true
	}
	// resolve finds path from the file's directory or, for a reference in
	// plain text, from the repository's root.
	resolve := func(from, path string, plain bool) (string, bool) {
		candidates := []string{filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), path)))}
		if plain {
			candidates = append(candidates, filepath.ToSlash(filepath.Clean(path)))
		}
		for _, c := range candidates {
			if strings.HasPrefix(c, "../") {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, c)); err == nil {
				return c, true
			}
		}
		return "", false
	}
	checked := 0
	for _, file := range textFiles(t) {
		text := readDoc(t, file)
		plain := url.ReplaceAllString(text, "")
		if strings.HasSuffix(file, ".md") {
			prose := inlineCode.ReplaceAllString(withoutFences(text), "``")
			for _, m := range mdLink.FindAllStringSubmatch(prose, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					var ok bool
					if dest, ok = resolve(file, path, false); !ok {
						t.Errorf("%s: link %q: no file %s", file, target, path)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if a, _, _ := sections(dest); !a[anchor] {
					t.Errorf("%s: link %q: %s has no heading with the anchor #%s", file, target, dest, anchor)
				}
			}
		}
		for _, m := range sectionRef.FindAllStringSubmatch(plain, -1) {
			checked++
			dest, ok := resolve(file, m[1], true)
			if !ok {
				t.Errorf("%s: %s#%s: no file %s", file, m[1], m[2], m[1])
				continue
			}
			if a, _, _ := sections(dest); !a[m[2]] {
				t.Errorf("%s: %s#%s: %s has no heading with that anchor", file, m[1], m[2], dest)
			}
		}
		for _, m := range titleRef.FindAllStringSubmatch(plain, -1) {
			checked++
			dest, ok := resolve(file, m[1], true)
			if !ok {
				t.Errorf("%s: %s, %q: no file %s", file, m[1], m[2], m[1])
				continue
			}
			title := commentBreak.ReplaceAllString(m[2], " ")
			if _, ti, _ := sections(dest); !ti[title] {
				t.Errorf("%s: %s, %q: %s has no heading of that title", file, m[1], title, dest)
			}
		}
		for _, m := range pathRef.FindAllStringSubmatch(plain, -1) {
			checked++
			if _, ok := resolve(file, m[1], true); !ok {
				t.Errorf("%s: %s: no such file", file, m[1])
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d links and references found: the patterns no longer match the documents", checked)
	}
}

// headings are a Markdown document's anchors, as GitHub makes them, and
// its headings' titles (code spans without their backticks).
func headings(text string) (anchors, titles map[string]bool) {
	anchors, titles = map[string]bool{}, map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(withoutFences(text), "\n") {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		title := strings.ReplaceAll(m[1], "`", "")
		titles[title] = true
		slug := slugOf(title)
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors, titles
}

// slugOf is GitHub's anchor of a heading: lower case, letters, digits,
// hyphens and underscores kept, spaces made hyphens, the rest dropped.
func slugOf(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// withoutFences is the Markdown text with its fenced code blocks blanked
// (their lines kept, empty), where nothing is a heading or a link.
func withoutFences(text string) string {
	lines := strings.Split(text, "\n")
	in := false
	for i, line := range lines {
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		if fence || in {
			lines[i] = ""
		}
		if fence {
			in = !in
		}
	}
	return strings.Join(lines, "\n")
}

// textFiles are the repository's files a reader or a log shows, where a
// pointer to a document may stand: documents, code, the chart, scripts.
func textFiles(t *testing.T) []string {
	return repoFiles(t, func(rel string) bool {
		switch filepath.Ext(rel) {
		case ".md", ".go", ".yaml", ".yml", ".tpl", ".txt", ".sh", ".py":
			return true
		}
		return rel == "Makefile" || strings.HasPrefix(rel, ".ci/")
	})
}
