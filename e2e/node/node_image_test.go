//go:build e2e

package node

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestNodeReleaseImage: the node's asya-sync runs the release image that
// `make image` built (the image step of .ci/e2e.sh), by digest: the kubelet
// reports the pod's image as a cluster that pulled it from a registry
// does, <repository>@<digest of the image index>, and that digest is the
// one the builder printed.
func TestNodeReleaseImage(t *testing.T) {
	nodeDriver(t)
	assertReleaseImage(t, nodeServiceNS, nodeServiceSelector, "e2e.local/asya-sync:e2e")
}

// releaseDigests reads the digests the builder wrote
// (ASYA_E2E_IMAGE_DIGESTS, .cache/image/digests): "ref", "index" and one
// line per platform, each "key value".
func releaseDigests(t *testing.T) map[string]string {
	t.Helper()
	file := os.Getenv("ASYA_E2E_IMAGE_DIGESTS")
	if file == "" {
		t.Fatal("ASYA_E2E_IMAGE_DIGESTS is not set (.ci/e2e.sh sets it to the digests make image wrote)")
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	digests := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			digests[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(digests["ref"], ":") || !strings.HasPrefix(digests["index"], "sha256:") || !strings.HasPrefix(digests["linux/amd64"], "sha256:") {
		t.Fatalf("%s lacks the ref, index or linux/amd64 line: %v", file, digests)
	}
	return digests
}

// assertReleaseImage: every Ready pod of the selector runs its asya-sync
// container from image (the name the chart gave it), which the kubelet
// reports as the builder's image index, by digest, under the repository
// of either name the node imported it as (both name one image, and the
// kubelet reports the first).
func assertReleaseImage(t *testing.T, ns, selector, image string) {
	t.Helper()
	digests := releaseDigests(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods, err := waitPodsReady(ctx, ns, selector, 1, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	repos := map[string]bool{}
	for _, name := range []string{digests["ref"], testenv.NodeImage("asya-sync")} {
		repos[name[:strings.LastIndex(name, ":")]] = true
	}
	for _, p := range pods {
		found := false
		statuses, _ := testenv.Field(p, "status", "containerStatuses").([]any)
		for _, s := range statuses {
			cs := s.(testenv.Obj)
			if testenv.Str(cs, "name") != "asya-sync" {
				continue
			}
			found = true
			id := testenv.Str(cs, "imageID")
			t.Logf("pod %s: asya-sync's imageID %s", testenv.Str(p, "metadata", "name"), id)
			repo, digest, _ := strings.Cut(id, "@")
			if digest != digests["index"] || !repos[repo] {
				t.Errorf("pod %s runs imageID %q, want <repository>@%s (the index make image built; its amd64 manifest is %s), the repository one of %v",
					testenv.Str(p, "metadata", "name"), id, digests["index"], digests["linux/amd64"], repos)
			}
		}
		if !found {
			t.Errorf("pod %s has no asya-sync container status", testenv.Str(p, "metadata", "name"))
		}
		containers, _ := testenv.Field(p, "spec", "containers").([]any)
		for _, c := range containers {
			if c := c.(testenv.Obj); testenv.Str(c, "name") == "asya-sync" && testenv.Str(c, "image") != image {
				t.Errorf("pod %s's asya-sync container is of image %q, want %q", testenv.Str(p, "metadata", "name"), testenv.Str(c, "image"), image)
			}
		}
	}
}
