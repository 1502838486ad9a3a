package docs

import (
	"context"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// registryPlaceholder is the registry docs/install.md's commands push to.
const registryPlaceholder = "registry.example.com"

// TestBuildingTheImageYourself runs docs/install.md's "Building the image
// yourself" as printed, in a copy of the tree (no .git: the time comes
// from SOURCE_DATE_EPOCH), for linux/amd64 only (IMAGE_PLATFORMS, to keep
// it short), against a real registry on loopback in place of
// registry.example.com, with helm recording its call (there is no cluster
// here). The registry then serves, under the tag pushed, the image index
// make image built, by the digest it wrote; and helm is given that
// registry's repository and the chart's appVersion as the tag.
func TestBuildingTheImageYourself(t *testing.T) {
	for _, tool := range []string{"bash", "make", "go", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s to run the document's commands with", tool)
		}
	}
	block := fencedAfter(t, "docs/install.md", "### Building the image yourself (air-gapped clusters, before a release)", "sh")
	if !strings.Contains(block, registryPlaceholder) {
		t.Fatalf("the block names no %s to replace:\n%s", registryPlaceholder, block)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	tree := copyTree(t)
	calls := filepath.Join(t.TempDir(), "helm-calls")
	bin := t.TempDir()
	helm := "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "helm"), []byte(helm), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", strings.ReplaceAll(block, registryPlaceholder, host))
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"IMAGE_PLATFORMS=linux/amd64", "SOURCE_DATE_EPOCH=1700000000")
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, block, out)
	}

	version := appVersion(t)
	digests := readDigests(t, filepath.Join(tree, ".cache", "image", "digests"))
	ref, err := name.ParseReference(host + "/asya-sync:" + version)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatalf("the registry serves no %s after the push: %v\n%s", ref, err, out)
	}
	if desc.Digest.String() != digests["index"] || desc.MediaType != types.OCIImageIndex {
		t.Errorf("the registry serves %s as %s (%s), want the index make image built, %s", ref, desc.Digest, desc.MediaType, digests["index"])
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest.String() != digests["linux/amd64"] {
		t.Errorf("the pushed index lists %+v, want the linux/amd64 image %s", m.Manifests, digests["linux/amd64"])
	}

	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("the block did not run helm: %v", err)
	}
	args := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, set := range []string{"image.repository=" + host + "/asya-sync", "image.tag=" + version} {
		if i := slices.Index(args, set); i < 1 || args[i-1] != "--set" {
			t.Errorf("helm was run as %q, without --set %s", args, set)
		}
	}
}

// copyTree copies the repository, without .git and what builds leave,
// into a directory of its own.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch {
		case d.IsDir() && slices.Contains([]string{".git", ".cache", "bin", "node_modules", "__pycache__"}, d.Name()):
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// appVersion is chart/Chart.yaml's appVersion.
func appVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`).FindStringSubmatch(readDoc(t, "chart/Chart.yaml"))
	if m == nil {
		t.Fatal("chart/Chart.yaml has no appVersion")
	}
	return m[1]
}

// readDigests reads the digests make image wrote, "key value" a line.
func readDigests(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("make image wrote no digests: %v", err)
	}
	digests := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			digests[k] = v
		}
	}
	if !strings.HasPrefix(digests["index"], "sha256:") {
		t.Fatalf("%s: no index digest:\n%s", file, data)
	}
	return digests
}
