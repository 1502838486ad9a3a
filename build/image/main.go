// Command image builds asya-sync's release image without a container
// engine or a registry: the binary cross-compiled for each platform, one
// layer per platform with no base image, and an OCI image index of them,
// written as an OCI layout and as an OCI archive (the layout tarred).
// Everything, the created time and every file's mtime included, comes from
// the source tree and SOURCE_DATE_EPOCH, so two builds of one commit give
// the same digests.
//
// Run it from the repository root (`make image` does):
//
//	go run ./build/image [--platforms linux/amd64,linux/arm64] [--out .cache/image]
//	go run ./build/image --rootfs DIR --platforms linux/amd64
//
// The first writes DIR/oci (the layout), DIR/asya-sync.oci.tar and
// DIR/digests, and prints the digests. The second writes one platform's
// file tree into DIR, for the Dockerfile's final stage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// options are what one build is made of.
type options struct {
	platforms []v1.Platform
	version   string
	commit    string
	epoch     time.Time // the created time and every file's mtime
	ref       string    // the name the index is annotated with
	out       string
	rootfs    string
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("build/image: ")
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		log.Fatal(err)
	}
	if o.rootfs != "" {
		err = buildRootfs(o)
	} else {
		err = buildImage(o)
	}
	if err != nil {
		log.Fatal(err)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms to build")
	fs.StringVar(&o.version, "version", envOr("VERSION", gitOr("devel", "describe", "--tags", "--always", "--dirty")), "the version asya-sync reports (VERSION)")
	fs.StringVar(&o.commit, "commit", envOr("COMMIT", gitOr("unknown", "rev-parse", "HEAD")), "the commit asya-sync reports (COMMIT)")
	fs.StringVar(&o.ref, "ref", "", "the image reference the index is annotated with (default ghcr.io/asya-sh/asya-sync:<chart appVersion>)")
	fs.StringVar(&o.out, "out", ".cache/image", "where the layout, the archive and the digests go")
	fs.StringVar(&o.rootfs, "rootfs", "", "write only this one platform's file tree into this directory")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return o, err
		}
		o.platforms = append(o.platforms, *p)
	}
	if o.rootfs != "" && len(o.platforms) != 1 {
		return o, errors.New("--rootfs writes one platform's tree: name it with --platforms")
	}
	var err error
	o.epoch, err = sourceDateEpoch()
	return o, err
}

// sourceDateEpoch is SOURCE_DATE_EPOCH, or the HEAD commit's time: the one
// time in the image, so that it depends on the source and not on the clock.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		s = gitOr("", "log", "-1", "--format=%ct", "HEAD")
	}
	if s == "" {
		return time.Time{}, errors.New("set SOURCE_DATE_EPOCH: there is no git commit to take the image's time from")
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// defaultRef is the chart's default image: its repository at the chart's
// appVersion, the tag a release publishes.
func defaultRef() (string, error) {
	data, err := os.ReadFile("chart/Chart.yaml")
	if err != nil {
		return "", fmt.Errorf("the default --ref needs the chart's appVersion: %w", err)
	}
	m := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`).FindSubmatch(data)
	if m == nil {
		return "", errors.New("chart/Chart.yaml has no appVersion")
	}
	return "ghcr.io/asya-sh/asya-sync:" + string(m[1]), nil
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// gitOr is git's answer, or fallback outside a checkout (a Docker build
// context has no .git).
func gitOr(fallback string, args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if s := strings.TrimSpace(string(out)); err == nil && s != "" {
		return s
	}
	return fallback
}
