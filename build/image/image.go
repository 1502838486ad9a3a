package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// How the container runs: the service, as nonroot (distroless's uid and
// gid, numeric so that the kubelet can check runAsNonRoot), on the port
// the chart's Service targets. The Dockerfile must say the same
// (TestDockerfileRunsLikeTheImage).
var (
	entrypoint = []string{"/asya-sync", "serve"}
	command    = []string{"--config", "/etc/asya-sync/config/config.yaml", "--listen", ":8080"}
)

const (
	user        = "65532:65532"
	exposedPort = "8080/tcp"
	source      = "https://github.com/asya-sh/asya-sync"
)

// The accounts the image knows, as distroless names them.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// file is one entry of the image's only layer.
type file struct {
	name string // without the leading slash; a directory ends in "/"
	mode int64  // permission bits as a tar header holds them (01777: sticky)
	data []byte
}

func (f file) isDir() bool { return strings.HasSuffix(f.name, "/") }

// rootFiles is the whole file system, in the order the layer holds it.
// /tmp is where Go's os.TempDir points: the chart mounts an emptyDir
// there, and a container run without the chart finds it writable too.
func rootFiles(binary []byte) []file {
	return []file{
		{name: "asya-sync", mode: 0o755, data: binary},
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "tmp/", mode: 0o1777},
	}
}

// compile cross-compiles ./cmd/asya-sync for p with the Makefile's build
// flags (CGO_ENABLED=0, -trimpath, the version and commit in ldflags) and
// returns the binary.
func compile(dir string, p v1.Platform, o options) ([]byte, error) {
	out := filepath.Join(dir, "asya-sync-"+strings.ReplaceAll(p.String(), "/", "-"))
	pkg := "github.com/asya-sh/asya-sync/internal/version"
	ldflags := fmt.Sprintf("-s -w -X %s.version=%s -X %s.commit=%s", pkg, o.version, pkg, o.commit)
	// -buildvcs=false: the version and commit come from ldflags, and the
	// VCS stamp would make a build in a checkout differ from one in a
	// Docker build context, which has no .git.
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", out, "./cmd/asya-sync")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Architecture == "arm" && p.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build for %s: %w", p, err)
	}
	return os.ReadFile(out)
}

// layerTar is the layer's tar: owned by root, every mtime the epoch, so
// that its bytes depend on the files alone.
func layerTar(files []file, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch, Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX}
		if f.isDir() {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	err := tw.Close()
	return buf.Bytes(), err
}

// platformImage is one platform's image: no base, one layer, the
// service's run configuration.
func platformImage(binary []byte, p v1.Platform, o options) (v1.Image, error) {
	tarBytes, err := layerTar(rootFiles(binary), o.epoch)
	if err != nil {
		return nil, err
	}
	opener := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tarBytes)), nil }
	// Compressed once (cached): the digest, the size and the layout each
	// read the compressed bytes.
	layer, err := tarball.LayerFromOpener(opener, tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: o.epoch},
		CreatedBy: "go run ./build/image",
		Comment:   "asya-sync, /etc/passwd, /etc/group, /tmp",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: o.epoch}
	cf.Config = runConfig(o)
	return mutate.ConfigFile(img, cf)
}

func runConfig(o options) v1.Config {
	return v1.Config{
		Entrypoint:   entrypoint,
		Cmd:          command,
		User:         user,
		ExposedPorts: map[string]struct{}{exposedPort: {}},
		Labels:       labels(o),
	}
}

// labels are the OCI annotations registries and scanners read from the
// image's config.
func labels(o options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":    "asya-sync",
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.commit,
	}
	if spdx := license(); spdx != "" {
		l["org.opencontainers.image.licenses"] = spdx
	}
	return l
}

// license is the SPDX identifier of the repository's LICENSE file, when
// it has one this recognizes.
func license() string {
	data, err := os.ReadFile("LICENSE")
	if err != nil {
		return ""
	}
	head := string(data[:min(len(data), 200)])
	switch {
	case strings.Contains(head, "Apache License") && strings.Contains(head, "Version 2.0"):
		return "Apache-2.0"
	case strings.Contains(head, "MIT License"):
		return "MIT"
	}
	return ""
}

// index is the multi-platform image: one manifest per platform, in the
// order given.
func index(images []v1.Image, platforms []v1.Platform) v1.ImageIndex {
	adds := make([]mutate.IndexAddendum, len(images))
	for i := range images {
		p := platforms[i]
		adds[i] = mutate.IndexAddendum{Add: images[i], Descriptor: v1.Descriptor{Platform: &p}}
	}
	return mutate.AppendManifests(empty.Index, adds...)
}
