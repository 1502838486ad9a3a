package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Where buildImage writes, under --out.
const (
	layoutDir   = "oci"
	archiveFile = "asya-sync.oci.tar"
	digestsFile = "digests"
)

// buildImage builds every platform and writes the layout, the archive and
// the digests.
func buildImage(o options) error {
	if o.ref == "" {
		var err error
		if o.ref, err = defaultRef(); err != nil {
			return err
		}
	}
	tag, err := name.NewTag(o.ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("--ref: %w", err)
	}
	images, err := buildAll(o)
	if err != nil {
		return err
	}
	idx := index(images, o.platforms)
	if err := writeLayout(filepath.Join(o.out, layoutDir), idx, tag); err != nil {
		return err
	}
	if err := writeArchive(filepath.Join(o.out, layoutDir), filepath.Join(o.out, archiveFile), o.epoch); err != nil {
		return err
	}
	d, err := digestLines(o.ref, idx, images, o.platforms)
	if err != nil {
		return err
	}
	fmt.Print(d)
	return writeAtomically(filepath.Join(o.out, digestsFile), []byte(d))
}

// writeAtomically replaces file by a rename: a reader sees the old
// contents or the new, whole.
func writeAtomically(file string, data []byte) error {
	tmp := file + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// buildAll compiles and assembles each platform's image.
func buildAll(o options) ([]v1.Image, error) {
	tmp, err := os.MkdirTemp("", "asya-sync-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var images []v1.Image
	for _, p := range o.platforms {
		binary, err := compile(tmp, p, o)
		if err != nil {
			return nil, err
		}
		img, err := platformImage(binary, p, o)
		if err != nil {
			return nil, err
		}
		images = append(images, img)
	}
	return images, nil
}

// writeLayout writes the index as a fresh OCI layout (nothing of an
// earlier build stays), naming it in index.json: the tag under the OCI
// annotation (what skopeo's oci-archive:FILE:TAG matches), the whole
// reference under containerd's, which `ctr images import` names it by.
// The names are in index.json only, so the index's digest does not depend
// on them.
func writeLayout(dir string, idx v1.ImageIndex, tag name.Tag) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		"io.containerd.image.name":          tag.String(),
	}))
}

// writeArchive tars the layout, in name order, owned by root, every mtime
// the epoch: the OCI archive `ctr images import` and skopeo's oci-archive:
// read. It replaces the file only once it is whole.
func writeArchive(dir, file string, epoch time.Time) error {
	f, err := os.CreateTemp(filepath.Dir(file), ".archive-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		return addToArchive(tw, path, filepath.ToSlash(rel), d.IsDir(), epoch)
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), file)
}

func addToArchive(tw *tar.Writer, path, rel string, dir bool, epoch time.Time) error {
	h := &tar.Header{Name: rel, Mode: 0o644, ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if dir {
		h.Name, h.Mode, h.Typeflag = rel+"/", 0o755, tar.TypeDir
		return tw.WriteHeader(h)
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	h.Size = info.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}

// digestLines is what scripts and tests read: the reference, the index's
// digest, then each platform's manifest digest, one "key value" a line.
func digestLines(ref string, idx v1.ImageIndex, images []v1.Image, platforms []v1.Platform) (string, error) {
	h, err := idx.Digest()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ref %s\nindex %s\n", ref, h)
	for i, img := range images {
		h, err := img.Digest()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %s\n", platforms[i], h)
	}
	return b.String(), nil
}

// buildRootfs writes the one platform's file tree into o.rootfs, as the
// layer holds it: what the Dockerfile copies into its final stage.
func buildRootfs(o options) error {
	tmp, err := os.MkdirTemp("", "asya-sync-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	binary, err := compile(tmp, o.platforms[0], o)
	if err != nil {
		return err
	}
	return writeRootfs(o.rootfs, rootFiles(binary), o.epoch)
}

// writeRootfs writes files under root with their modes and the epoch as
// every mtime.
func writeRootfs(root string, files []file, epoch time.Time) error {
	for _, f := range files {
		if err := writeFile(root, f); err != nil {
			return err
		}
	}
	// Directories last: writing their files changed their mtimes.
	for i := len(files) - 1; i >= 0; i-- {
		if err := os.Chtimes(filepath.Join(root, files[i].name), epoch, epoch); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(root string, f file) error {
	path := filepath.Join(root, f.name)
	mode := fs.FileMode(f.mode & 0o777)
	if f.mode&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	if f.isDir() {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.data, mode); err != nil {
			return err
		}
	}
	// Chmod after: the umask and an existing file's mode do not count.
	return os.Chmod(path, mode)
}
