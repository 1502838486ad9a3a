package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

var (
	testEpoch     = time.Unix(1700000000, 0).UTC()
	testPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
	testOptions   = options{platforms: testPlatforms, version: "v1.2.3", commit: "abc123", epoch: testEpoch}
)

// fakeBinaries stand in for the compiled service: what is assembled around
// them is what these tests check.
var fakeBinaries = [][]byte{[]byte("amd64 binary"), []byte("arm64 binary, longer")}

func testIndex(t *testing.T, o options) (v1.ImageIndex, []v1.Image) {
	t.Helper()
	var images []v1.Image
	for i, b := range fakeBinaries {
		img, err := platformImage(b, o.platforms[i], o)
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, img)
	}
	return index(images, o.platforms), images
}

// TestLayerHoldsTheRootFiles: the one layer holds the binary, passwd,
// group and a sticky /tmp, owned by root, every mtime the epoch.
func TestLayerHoldsTheRootFiles(t *testing.T) {
	_, images := testIndex(t, testOptions)
	layers, err := images[0].Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 (no base image)", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want := map[string]struct {
		mode int64
		data string
	}{
		"asya-sync":  {0o755, "amd64 binary"},
		"etc/":       {0o755, ""},
		"etc/passwd": {0o644, passwd},
		"etc/group":  {0o644, group},
		"tmp/":       {0o1777, ""},
	}
	seen := 0
	eachTarEntry(t, rc, func(h *tar.Header, data []byte) {
		w, ok := want[h.Name]
		if !ok {
			t.Errorf("unexpected entry %q", h.Name)
			return
		}
		seen++
		if h.Mode != w.mode || string(data) != w.data || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(testEpoch) {
			t.Errorf("%s: mode %o uid %d gid %d mtime %s data %q, want mode %o, root, %s, %q",
				h.Name, h.Mode, h.Uid, h.Gid, h.ModTime, data, w.mode, testEpoch, w.data)
		}
	})
	if seen != len(want) {
		t.Errorf("the layer has %d of the %d entries", seen, len(want))
	}
	if !strings.Contains(passwd, "nonroot:x:65532:65532:") || !strings.Contains(group, "nonroot:x:65532:") {
		t.Errorf("nonroot is not 65532:65532 in passwd/group, unlike the image's User %s", user)
	}
}

// TestConfigRunsTheService: the run configuration, the platform, the
// created time and the labels.
func TestConfigRunsTheService(t *testing.T) {
	_, images := testIndex(t, testOptions)
	for i, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if !slices.Equal(c.Entrypoint, []string{"/asya-sync", "serve"}) || !slices.Equal(c.Cmd, command) ||
			c.User != "65532:65532" || len(c.ExposedPorts) != 1 {
			t.Errorf("config %+v", c)
		}
		if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
			t.Errorf("exposed ports %v, want 8080/tcp", c.ExposedPorts)
		}
		if cf.OS != testPlatforms[i].OS || cf.Architecture != testPlatforms[i].Architecture {
			t.Errorf("image %d is %s/%s, want %s", i, cf.OS, cf.Architecture, testPlatforms[i])
		}
		if !cf.Created.Equal(testEpoch) {
			t.Errorf("created %s, want %s", cf.Created, testEpoch)
		}
		for k, v := range map[string]string{
			"org.opencontainers.image.version":  "v1.2.3",
			"org.opencontainers.image.revision": "abc123",
			"org.opencontainers.image.source":   "https://github.com/asya-sh/asya-sync",
			"org.opencontainers.image.title":    "asya-sync",
		} {
			if c.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
			}
		}
		if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
			t.Errorf("manifest media type %s, want OCI", mt)
		}
	}
}

// TestSameSourceSameDigest: two assemblies of the same binaries give the
// same digests and the same archive bytes, and another epoch another
// digest (the time is in the image, from SOURCE_DATE_EPOCH alone).
func TestSameSourceSameDigest(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	a := writeTestImage(t, first, testOptions)
	time.Sleep(1100 * time.Millisecond) // a clock that leaked in would now differ
	b := writeTestImage(t, second, testOptions)
	if a != b {
		t.Errorf("two builds: digests\n%s\nand\n%s", a, b)
	}
	archA, _ := os.ReadFile(filepath.Join(first, archiveFile))
	archB, _ := os.ReadFile(filepath.Join(second, archiveFile))
	if len(archA) == 0 || !bytes.Equal(archA, archB) {
		t.Errorf("two builds wrote different archives (%d and %d bytes)", len(archA), len(archB))
	}
	later := testOptions
	later.epoch = testEpoch.Add(time.Second)
	if c := writeTestImage(t, t.TempDir(), later); c == a {
		t.Error("another SOURCE_DATE_EPOCH gave the same digests")
	}
}

// writeTestImage writes the layout, the archive and the digests as
// buildImage does, and returns the digests.
func writeTestImage(t *testing.T, out string, o options) string {
	t.Helper()
	idx, images := testIndex(t, o)
	tag := name.MustParseReference("ghcr.io/asya-sh/asya-sync:1.2.3").(name.Tag)
	if err := writeLayout(filepath.Join(out, layoutDir), idx, tag); err != nil {
		t.Fatal(err)
	}
	if err := writeArchive(filepath.Join(out, layoutDir), filepath.Join(out, archiveFile), o.epoch); err != nil {
		t.Fatal(err)
	}
	d, err := digestLines(tag.String(), idx, images, o.platforms)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLayoutNamesTheIndex: index.json points at the index, named for
// skopeo (the tag) and containerd (the reference); the index lists each
// platform's manifest; the archive holds the layout's files; the digests
// say the index's and the manifests' digests.
func TestLayoutNamesTheIndex(t *testing.T) {
	out := t.TempDir()
	digests := writeTestImage(t, out, testOptions)
	p, err := layout.FromPath(filepath.Join(out, layoutDir))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: %+v, want one image index", im.Manifests)
	}
	desc := im.Manifests[0]
	if desc.Annotations["org.opencontainers.image.ref.name"] != "1.2.3" ||
		desc.Annotations["io.containerd.image.name"] != "ghcr.io/asya-sh/asya-sync:1.2.3" {
		t.Errorf("index.json annotations %v", desc.Annotations)
	}
	idx, err := top.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantLines := []string{"ref ghcr.io/asya-sh/asya-sync:1.2.3", "index " + desc.Digest.String()}
	for i, m := range manifest.Manifests {
		if m.Platform == nil || m.Platform.String() != testPlatforms[i].String() {
			t.Errorf("manifest %d: platform %v, want %s", i, m.Platform, testPlatforms[i])
		}
		wantLines = append(wantLines, testPlatforms[i].String()+" "+m.Digest.String())
	}
	if want := strings.Join(wantLines, "\n") + "\n"; digests != want {
		t.Errorf("digests\n%s\nwant\n%s", digests, want)
	}
	assertArchiveHoldsLayout(t, filepath.Join(out, archiveFile), filepath.Join(out, layoutDir))
}

func assertArchiveHoldsLayout(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := 0
	eachTarEntry(t, f, func(h *tar.Header, got []byte) {
		if h.Typeflag != tar.TypeReg {
			return
		}
		files++
		want, err := os.ReadFile(filepath.Join(dir, h.Name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("archive entry %s differs from the layout's file (%v)", h.Name, err)
		}
	})
	onDisk := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, _ error) error {
		if !d.IsDir() {
			onDisk++
		}
		return nil
	})
	if files == 0 || files != onDisk {
		t.Errorf("the archive has %d files, the layout %d", files, onDisk)
	}
}

// TestRootfsIsTheLayer: --rootfs writes the layer's files with its modes
// and times, for the Dockerfile's final stage.
func TestRootfsIsTheLayer(t *testing.T) {
	dir := t.TempDir()
	files := rootFiles([]byte("binary"))
	if err := writeRootfs(dir, files, testEpoch); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		info, err := os.Stat(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		mode := int64(info.Mode().Perm())
		if info.Mode()&fs.ModeSticky != 0 {
			mode |= 0o1000
		}
		if mode != f.mode || info.IsDir() != f.isDir() || !info.ModTime().Equal(testEpoch) {
			t.Errorf("%s: mode %o dir %v mtime %s, want %o %v %s", f.name, mode, info.IsDir(), info.ModTime(), f.mode, f.isDir(), testEpoch)
		}
		if !f.isDir() {
			if data, _ := os.ReadFile(filepath.Join(dir, f.name)); !bytes.Equal(data, f.data) {
				t.Errorf("%s holds %q, want %q", f.name, data, f.data)
			}
		}
	}
}

// TestRootfsNeedsOnePlatform: the tree is one platform's.
func TestRootfsNeedsOnePlatform(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if _, err := parseFlags([]string{"--rootfs", t.TempDir()}); err == nil {
		t.Error("--rootfs with the two default platforms was accepted")
	}
	o, err := parseFlags([]string{"--rootfs", t.TempDir(), "--platforms", "linux/arm64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.platforms) != 1 || o.platforms[0].Architecture != "arm64" || !o.epoch.Equal(testEpoch) {
		t.Errorf("options %+v", o)
	}
}

// TestDockerfileRunsLikeTheImage: the Dockerfile's final stage starts the
// container as the builder's image does.
func TestDockerfileRunsLikeTheImage(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stage := finalStage(string(data))
	if got := stage["FROM"]; got != "scratch" {
		t.Errorf("the final stage is FROM %q, want scratch (the builder's image has no base)", got)
	}
	if got := stage["COPY"]; got != "--from=build /out/ /" {
		t.Errorf("the final stage copies %q, want the builder's --rootfs tree (--from=build /out/ /)", got)
	}
	if !strings.Contains(string(data), "go run ./build/image --rootfs /out") {
		t.Error("the build stage does not run go run ./build/image --rootfs /out")
	}
	for _, c := range []struct {
		instruction string
		want        []string
	}{
		{"ENTRYPOINT", entrypoint},
		{"CMD", command},
	} {
		var got []string
		if err := json.Unmarshal([]byte(stage[c.instruction]), &got); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Dockerfile %s %s, want %q (build/image)", c.instruction, stage[c.instruction], c.want)
		}
	}
	if stage["USER"] != user {
		t.Errorf("Dockerfile USER %q, want %q (build/image)", stage["USER"], user)
	}
	if stage["EXPOSE"]+"/tcp" != exposedPort {
		t.Errorf("Dockerfile EXPOSE %q, want %q (build/image)", stage["EXPOSE"], exposedPort)
	}
}

// finalStage is the last stage's instructions, each with its arguments
// (the last of each kind; continuation lines joined).
func finalStage(dockerfile string) map[string]string {
	stage := map[string]string{}
	joined := strings.ReplaceAll(dockerfile, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, args, _ := strings.Cut(line, " ")
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			stage = map[string]string{}
		}
		stage[instr] = strings.TrimSpace(args)
	}
	return stage
}

// eachTarEntry calls visit with each entry of the tar stream r and its
// contents.
func eachTarEntry(t *testing.T, r io.Reader, visit func(h *tar.Header, data []byte)) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		visit(h, data)
	}
}
