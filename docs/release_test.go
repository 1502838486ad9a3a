package docs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The places that spell asya-sync's version, all held to chart/Chart.yaml's
// version by versionProblems, and all moved by `make version V=X.Y.Z`
// (.ci/release.sh version).
var (
	chartVersion    = regexp.MustCompile(`(?m)^version:\s*"?([^"\s]+)"?\s*$`)
	chartAppVersion = regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`)
	// manifestImage is the service's image in the plain manifests.
	manifestImage = regexp.MustCompile(`(?m)^\s*image:\s*\S+/asya-sync:(\S+)\s*$`)
	// versionLabel is the chart's app.kubernetes.io/version label.
	versionLabel = regexp.MustCompile(`(?m)app\.kubernetes\.io/version:\s*"?([^"\s]+)"?\s*$`)
	// docVersion is the version a document spells: a command's
	// ASYA_SYNC_VERSION=X.Y.Z, or the image by its tag. Placeholders
	// (X.Y.Z, <version>, $ASYA_SYNC_VERSION) are not versions.
	docVersion = regexp.MustCompile(`(?:ASYA_SYNC_VERSION=|ghcr\.io/asya-sh/asya-sync:)([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)`)
	// changelogSection is a heading of CHANGELOG.md: [Unreleased], or a
	// version and its date.
	changelogSection = regexp.MustCompile(`(?m)^## \[([^\]]+)\](.*)$`)
	changelogDate    = regexp.MustCompile(`^ - \d{4}-\d{2}-\d{2}$`)
)

// versionedDocs are the files besides the chart and manifests/ that may
// spell the version: the Markdown documents but the changelog (whose
// history names older ones), the examples and the chart's values; the
// same files .ci/release.sh's versioned_docs finds.
func versionedDocs(t *testing.T, dir string) []string {
	return filesUnder(t, dir, func(rel string) bool {
		return (strings.HasSuffix(rel, ".md") && rel != "CHANGELOG.md") || rel == "chart/values.yaml" ||
			(strings.HasPrefix(rel, "examples/") && strings.HasSuffix(rel, ".yaml"))
	})
}

// versionProblems reads the tree at dir: the chart's version, and every
// place that disagrees with it.
func versionProblems(t *testing.T, dir string) (version string, problems []string) {
	t.Helper()
	read := func(rel string) string {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			problems = append(problems, err.Error())
		}
		return string(data)
	}
	chart := read("chart/Chart.yaml")
	v, app := chartVersion.FindStringSubmatch(chart), chartAppVersion.FindStringSubmatch(chart)
	if v == nil || app == nil {
		return "", append(problems, "chart/Chart.yaml: no version or no appVersion")
	}
	version = v[1]
	if app[1] != version {
		problems = append(problems, fmt.Sprintf("chart/Chart.yaml: appVersion %s, version %s: a release is both", app[1], version))
	}

	images, labels := 0, 0
	manifests, _ := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	for _, f := range manifests {
		rel := "manifests/" + filepath.Base(f)
		text := read(rel)
		for _, m := range manifestImage.FindAllStringSubmatch(text, -1) {
			images++
			if m[1] != version {
				problems = append(problems, fmt.Sprintf("%s: image tag %s, chart %s (.ci/e2e.sh manifests)", rel, m[1], version))
			}
		}
		for _, m := range versionLabel.FindAllStringSubmatch(text, -1) {
			labels++
			if m[1] != version {
				problems = append(problems, fmt.Sprintf("%s: app.kubernetes.io/version %s, chart %s (.ci/e2e.sh manifests)", rel, m[1], version))
			}
		}
	}
	if images == 0 || labels == 0 {
		problems = append(problems, fmt.Sprintf("manifests/: %d asya-sync images and %d version labels found, want some of each", images, labels))
	}

	// CHANGELOG.md: Unreleased, then the chart's version, dated, and a
	// link reference for every section.
	changelog := read("CHANGELOG.md")
	sections := changelogSection.FindAllStringSubmatch(changelog, -1)
	switch {
	case len(sections) < 2 || sections[0][1] != "Unreleased":
		problems = append(problems, "CHANGELOG.md: want \"## [Unreleased]\" first, then the chart's version")
	case sections[1][1] != version || !changelogDate.MatchString(sections[1][2]):
		problems = append(problems, fmt.Sprintf("CHANGELOG.md: the newest release is %q%s, want \"## [%s] - YYYY-MM-DD\", the chart's version (make version)",
			sections[1][1], sections[1][2], version))
	}
	for _, s := range sections {
		if !strings.Contains(changelog, "\n["+s[1]+"]: ") {
			problems = append(problems, fmt.Sprintf("CHANGELOG.md: no link reference [%s]", s[1]))
		}
	}

	named := 0
	for _, rel := range versionedDocs(t, dir) {
		for _, m := range docVersion.FindAllStringSubmatch(read(rel), -1) {
			named++
			if m[1] != version {
				problems = append(problems, fmt.Sprintf("%s: %s, chart %s (make version)", rel, m[0], version))
			}
		}
	}
	if named == 0 {
		problems = append(problems, "no document names the version (docs/install.md#release-artifacts does)")
	}
	return version, problems
}

// TestVersionsAgree: the chart's version and appVersion, the image tag and
// labels of manifests/, CHANGELOG.md's newest release and every document
// that names the version are one version.
func TestVersionsAgree(t *testing.T) {
	version, problems := versionProblems(t, root)
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		t.Logf("chart/Chart.yaml says %s; make version V=X.Y.Z moves them all", version)
	}
}

// releaseTree copies into a new directory what .ci/release.sh reads and
// writes (the script, the chart's metadata and values, CHANGELOG.md,
// manifests/ and the versioned documents), with a .ci/e2e.sh that records
// its calls and, for `manifests`, rewrites the manifests' tag and labels
// as the regeneration would.
func releaseTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := []string{".ci/release.sh", "chart/Chart.yaml", "chart/values.yaml", "CHANGELOG.md"}
	manifests, _ := filepath.Glob(filepath.Join(root, "manifests", "*.yaml"))
	for _, f := range manifests {
		files = append(files, "manifests/"+filepath.Base(f))
	}
	files = append(files, versionedDocs(t, root)...)
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, rel), string(data))
	}
	writeFile(t, filepath.Join(dir, ".ci", "e2e.sh"), `#!/usr/bin/env bash
set -eu
cd "$(dirname "$0")/.."
echo "$*" >>e2e-calls
[ "$*" = manifests ] || exit 0
v=$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' chart/Chart.yaml)
sed -i -E -e "s#(image: [^ ]*/asya-sync:).*#\1$v#" -e "s#(app.kubernetes.io/version: ).*#\1\"$v\"#" manifests/*.yaml
`)
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// releaseScript runs .ci/release.sh in dir.
func releaseScript(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(dir, ".ci", "release.sh")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("release.sh %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), err
}

// TestVersionBump runs `.ci/release.sh version` (make version) on a copy
// of the tree: every place moves to the new version, so that
// versionProblems finds none; what was Unreleased becomes the new
// version's section, dated today, under an empty Unreleased, with its
// link references; the manifests are regenerated. A second bump to the
// same version, and a bump to something that is no version, are refused
// and change nothing.
func TestVersionBump(t *testing.T) {
	dir := releaseTree(t)
	old, problems := versionProblems(t, dir)
	if len(problems) > 0 {
		t.Fatalf("the copy disagrees before the bump: %v", problems)
	}
	changelog := filepath.Join(dir, "CHANGELOG.md")
	before := readFile(t, changelog)
	// Unreleased holds this test's entry alone, whatever the tree's holds.
	unreleased := "### Fixed\n\n- Something that was broken."
	head, rest, _ := strings.Cut(before, "## [Unreleased]\n")
	_, tail, ok := strings.Cut(rest, "\n## [")
	if !ok {
		t.Fatalf("CHANGELOG.md has no section after Unreleased:\n%s", before)
	}
	writeFile(t, changelog, head+"## [Unreleased]\n\n"+unreleased+"\n\n## ["+tail)
	wantOld, err := releaseScript(t, dir, "notes", old)
	if err != nil {
		t.Fatal(err)
	}

	const next = "9.8.7"
	start := time.Now().UTC().Format(time.DateOnly)
	if _, err := releaseScript(t, dir, "version", next); err != nil {
		t.Fatal(err)
	}
	end := time.Now().UTC().Format(time.DateOnly)
	version, problems := versionProblems(t, dir)
	if version != next {
		t.Errorf("chart/Chart.yaml at %s after the bump to %s", version, next)
	}
	for _, p := range problems {
		t.Errorf("after the bump: %s", p)
	}
	if calls := readFile(t, filepath.Join(dir, "e2e-calls")); calls != "manifests\n" {
		t.Errorf(".ci/e2e.sh called %q, want once with manifests", calls)
	}

	after := readFile(t, changelog)
	if !strings.Contains(after, "## [Unreleased]\n\n## ["+next+"] - "+start+"\n") &&
		!strings.Contains(after, "## [Unreleased]\n\n## ["+next+"] - "+end+"\n") {
		t.Errorf("CHANGELOG.md after the bump, want an empty Unreleased, then %s dated %s:\n%s", next, start, after)
	}
	base := "https://github.com/asya-sh/asya-sync"
	for _, link := range []string{
		"[Unreleased]: " + base + "/compare/v" + next + "...HEAD\n",
		"[" + next + "]: " + base + "/compare/v" + old + "...v" + next + "\n",
		"[" + old + "]: ",
	} {
		if !strings.Contains(after, "\n"+link) {
			t.Errorf("CHANGELOG.md after the bump has no link reference %q", link)
		}
	}
	if notes, err := releaseScript(t, dir, "notes", next); err != nil || strings.TrimSpace(notes) != unreleased {
		t.Errorf("notes %s: %q, %v; want what was Unreleased, %q", next, notes, err, unreleased)
	}
	if notes, err := releaseScript(t, dir, "notes", old); err != nil || notes != wantOld {
		t.Errorf("notes %s changed with the bump: %q, %v", old, notes, err)
	}

	chart := readFile(t, filepath.Join(dir, "chart", "Chart.yaml"))
	for _, bad := range []string{next, "9.8", "v9.9.9"} {
		if _, err := releaseScript(t, dir, "version", bad); err == nil {
			t.Errorf("version %s: accepted", bad)
		}
	}
	if readFile(t, filepath.Join(dir, "chart", "Chart.yaml")) != chart || readFile(t, changelog) != after {
		t.Errorf("a refused bump changed chart/Chart.yaml or CHANGELOG.md")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestVersionProblemsFound: each place that can disagree, made to, is
// named.
func TestVersionProblemsFound(t *testing.T) {
	for _, tc := range []struct {
		file, old, new, want string
	}{
		{"chart/Chart.yaml", "\nappVersion: ", "\nappVersion: \"0.0.1\"\nx: ", "chart/Chart.yaml: appVersion 0.0.1"},
		{"manifests/asya-sync.yaml", "/asya-sync:", "/asya-sync:0.0.1-", "manifests/asya-sync.yaml: image tag 0.0.1-"},
		{"manifests/compositecontroller.yaml", "app.kubernetes.io/version: \"", "app.kubernetes.io/version: \"0.0.1-", "manifests/compositecontroller.yaml: app.kubernetes.io/version 0.0.1-"},
		{"CHANGELOG.md", "## [Unreleased]\n", "## [Unreleased]\n\n## [0.0.1] - 2020-01-01\n", "CHANGELOG.md: the newest release is \"0.0.1\""},
		{"CHANGELOG.md", "\n[Unreleased]: ", "\n[Unreleased-not]: ", "no link reference [Unreleased]"},
		{"docs/install.md", "ASYA_SYNC_VERSION=", "ASYA_SYNC_VERSION=0.0.1 # ", "docs/install.md: ASYA_SYNC_VERSION=0.0.1"},
		{"README.md", "## Install\n", "## Install\n\nghcr.io/asya-sh/asya-sync:0.0.2\n", "README.md: ghcr.io/asya-sh/asya-sync:0.0.2"},
	} {
		t.Run(tc.file+" "+tc.want, func(t *testing.T) {
			dir := releaseTree(t)
			path := filepath.Join(dir, tc.file)
			text := readFile(t, path)
			if !strings.Contains(text, tc.old) {
				t.Fatalf("%s has no %q", tc.file, tc.old)
			}
			writeFile(t, path, strings.Replace(text, tc.old, tc.new, 1))
			_, problems := versionProblems(t, dir)
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Errorf("problems %q, want one naming %q", problems, tc.want)
			}
		})
	}
}

// TestReleaseChecks: the release workflow's first step passes for the
// chart's version and its image repository, and refuses another version or
// repository; the notes are CHANGELOG.md's section, and a version without
// one has none.
func TestReleaseChecks(t *testing.T) {
	version, _ := versionProblems(t, root)
	if out, err := releaseScript(t, root, "check-tag", "v"+version, "ghcr.io/asya-sh/asya-sync"); err != nil {
		t.Errorf("check-tag v%s: %v", version, err)
	} else if !strings.Contains(out, version) {
		t.Errorf("check-tag v%s printed %q", version, out)
	}
	for _, args := range [][]string{
		{"check-tag", "v" + version + "-rc.9"},
		{"check-tag", version},
		{"check-tag", "v" + version, "ghcr.io/someone-else/asya-sync"},
		{"notes", "99.0.0"},
		{"notes", "Unreleased"},
	} {
		if _, err := releaseScript(t, root, args...); err == nil {
			t.Errorf("release.sh %s: accepted", strings.Join(args, " "))
		}
	}
	notes, err := releaseScript(t, root, "notes", version)
	if err != nil {
		t.Fatal(err)
	}
	changelog := readDoc(t, "CHANGELOG.md")
	if strings.TrimSpace(notes) == "" || !strings.Contains(changelog, "\n"+notes) || strings.Contains(notes, "## [") {
		t.Errorf("notes %s are not the body of its CHANGELOG.md section:\n%s", version, notes)
	}
}

// TestReleaseAssets: the release's files are laid flat, the manifests'
// crd/ with them, with a SHA256SUMS that checks each; two files of one
// name, or a missing source, are refused.
func TestReleaseAssets(t *testing.T) {
	// The script runs in the repository's root: absolute paths.
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "assets")
	listed, err := releaseScript(t, root, "assets", out, filepath.Join(root, "manifests"), filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CHANGELOG.md", "SHA256SUMS", "apiextensions.crossplane.io_environmentconfigs.yaml", "asya-sync.yaml",
		"asya.sh_asyncactors.yaml", "compositecontroller.yaml", "namespace.yaml"}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || strings.Fields(listed) == nil {
		t.Errorf("assets %v, want %v", got, want)
	}
	sums := readFile(t, filepath.Join(out, "SHA256SUMS"))
	if n := strings.Count(sums, "\n"); n != len(want)-1 {
		t.Errorf("SHA256SUMS has %d lines, want %d:\n%s", n, len(want)-1, sums)
	}
	check := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	check.Dir = out
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum --check: %v\n%s", err, b)
	}
	if crd := readFile(t, filepath.Join(out, "asya.sh_asyncactors.yaml")); crd != readFile(t, filepath.Join(root, "manifests", "crd", "asya.sh_asyncactors.yaml")) {
		t.Errorf("asya.sh_asyncactors.yaml is not manifests/crd's")
	}
	for _, args := range [][]string{
		{"assets", filepath.Join(t.TempDir(), "twice"), filepath.Join(root, "manifests"), filepath.Join(root, "manifests", "crd")},
		{"assets", filepath.Join(t.TempDir(), "missing"), filepath.Join(root, "no-such-file.tgz")},
	} {
		if _, err := releaseScript(t, root, args...); err == nil {
			t.Errorf("release.sh %s: accepted", strings.Join(args, " "))
		}
	}
}
