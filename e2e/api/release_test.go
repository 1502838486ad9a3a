//go:build e2e

package api

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

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// releaseManifests runs `.ci/release.sh manifests` as the release workflow
// does, with the tools this tier runs.
func releaseManifests(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return releaseStep(t, append([]string{"manifests"}, args...)...)
}

// releaseStep runs .ci/release.sh with args and the tools this tier runs:
// its standard output, or an error with its standard error.
func releaseStep(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(env.Root, ".ci", "release.sh")}, args...)...)
	cmd.Dir = env.Root
	cmd.Env = append(os.Environ(), "ASYA_E2E_BIN="+env.Bin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("release.sh %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// TestReleaseManifests: the manifests a release attaches, rendered by the
// release's own command with a sample digest and an owner's repository,
// are manifests/ laid out the same, with the service's image pinned by
// that digest and nothing else changed; the API server admits every object
// (server-side dry run, strict field validation). A digest that is not one
// is refused.
func TestReleaseManifests(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	repo := "ghcr.io/e2e-owner/asya-sync"
	dir := filepath.Join(t.TempDir(), "release")
	start := time.Now()
	if _, err := releaseManifests(t, digest, dir, repo); err != nil {
		t.Fatal(err)
	}
	env.Timed(".ci/release.sh manifests", start)

	files := []string{"namespace.yaml", "crd/asya.sh_asyncactors.yaml", "apiextensions.crossplane.io_environmentconfigs.yaml",
		"asya-sync.yaml", "compositecontroller.yaml"}
	var deployments []testenv.Obj
	for _, f := range files {
		released, err := testenv.ReadYAMLDocs(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		shipped, err := testenv.ReadYAMLDocs(filepath.Join(env.Root, "manifests", f))
		if err != nil {
			t.Fatal(err)
		}
		if len(released) == 0 || len(released) != len(shipped) {
			t.Errorf("%s: %d objects, manifests/ has %d", f, len(released), len(shipped))
			continue
		}
		for i, o := range released {
			key := testenv.Str(o, "kind") + "/" + testenv.Str(o, "metadata", "name")
			if err := dryRunApply(ctx, o); err != nil {
				t.Errorf("%s: API server rejects %s: %v", f, key, err)
			}
			// The same render but for the image: manifests/ names it by
			// the chart's version.
			var want any = shipped[i]
			if testenv.Str(o, "kind") == "Deployment" {
				deployments = append(deployments, o)
				want = jsonValue(strings.Replace(testenv.MustJSON(want), `"image":"ghcr.io/asya-sh/asya-sync:`+chartAppVersion(t)+`"`,
					`"image":"`+repo+"@"+digest+`"`, 1))
			}
			if !testenv.JSONEqual(o, want) {
				t.Errorf("%s: %s differs from manifests/ beyond the image:\n%s\n%s", f, key, testenv.MustJSON(o), testenv.MustJSON(want))
			}
		}
	}
	if len(deployments) != 1 {
		t.Fatalf("%d Deployments in the release's manifests, want 1", len(deployments))
	}
	containers := testenv.Field(deployments[0], "spec", "template", "spec", "containers").([]any)
	if got := testenv.Str(containers[0].(testenv.Obj), "image"); got != repo+"@"+digest {
		t.Errorf("the Deployment runs %q, want %s@%s", got, repo, digest)
	}

	for _, bad := range []string{"sha256:0123", "0123456789abcdef" + strings.Repeat("0", 48), "sha256:" + strings.Repeat("G", 64)} {
		if out, err := releaseManifests(t, bad, filepath.Join(t.TempDir(), "bad")); err == nil {
			t.Errorf("release.sh manifests %s: accepted\n%s", bad, out)
		}
	}
}

// chartAppVersion is chart/Chart.yaml's appVersion.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, "chart", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatal("chart/Chart.yaml has no appVersion")
	return ""
}

// indexDigest is the "index sha256:..." line of the digests make image
// wrote.
var indexDigest = regexp.MustCompile(`(?m)^index (sha256:[0-9a-f]{64})$`)

// TestReleasePushes runs the release's push steps against a registry on
// loopback (crane's, in memory): push-image pushes the image the
// environment step built (make image) and prints the digest of its index,
// the one the build wrote and the registry serves under the tag, an index
// of linux/amd64 and linux/arm64; push-chart pushes the package the chart
// step makes and prints the digest the registry serves, and Helm renders
// the chart from there with the version's image. Only the registry
// differs from the release: ghcr.io, and its login.
func TestReleasePushes(t *testing.T) {
	digests := os.Getenv("ASYA_E2E_IMAGE_DIGESTS")
	data, err := os.ReadFile(digests)
	if err != nil {
		testenv.Missing(t, "the release image's digests (make image, .ci/e2e.sh builds it)", err)
	}
	m := indexDigest.FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s names no index:\n%s", digests, data)
	}
	want := string(m[1])

	work := t.TempDir()
	crane := filepath.Join(work, "crane")
	build := exec.Command("go", "build", "-o", crane, "github.com/google/go-containerregistry/cmd/crane")
	build.Dir = env.Root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build crane: %v\n%s", err, out)
	}
	ports, err := testenv.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	registry := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p, err := testenv.StartProcess("registry", work, nil, crane, "registry", "serve", "--address", registry)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
	if err := testenv.WaitFor("registry", 30*time.Second, p, testenv.HTTPOK("http://"+registry+"/v2/")); err != nil {
		t.Fatal(err)
	}
	craneOut := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(crane, args...).Output()
		if err != nil {
			t.Fatalf("crane %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}

	const version = "9.9.9"
	start := time.Now()
	out, err := releaseStep(t, "push-image", version, registry+"/e2e/asya-sync")
	if err != nil {
		t.Fatal(err)
	}
	env.Timed(".ci/release.sh push-image", start)
	if got := strings.TrimSpace(out); got != want {
		t.Errorf("push-image printed %q, want the build's index %s", got, want)
	}
	if got := craneOut("digest", registry+"/e2e/asya-sync:"+version); got != want {
		t.Errorf("the registry serves %s:%s as %s, want %s", registry+"/e2e/asya-sync", version, got, want)
	}
	index := craneOut("manifest", registry+"/e2e/asya-sync@"+want)
	for _, platform := range []string{`"architecture":"amd64","os":"linux"`, `"architecture":"arm64","os":"linux"`} {
		if !strings.Contains(index, platform) {
			t.Errorf("the pushed index has no %s: %s", platform, index)
		}
	}

	pkg, err := releaseStep(t, "chart", version, filepath.Join(work, "dist"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = releaseStep(t, "push-chart", strings.TrimSpace(pkg), "oci://"+registry+"/e2e/charts", "--plain-http")
	if err != nil {
		t.Fatal(err)
	}
	chartDigest := strings.TrimSpace(out)
	if got := craneOut("digest", registry+"/e2e/charts/asya-sync:"+version); got != chartDigest {
		t.Errorf("push-chart printed %s, the registry serves %s", chartDigest, got)
	}
	rendered, err := env.Helm("template", "asya-sync", "oci://"+registry+"/e2e/charts/asya-sync", "--version", version, "--plain-http",
		"-f", "e2e/testdata/values-broker-user.yaml", "--set", "hooks.generateOffline=true", "--show-only", "templates/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rendered, "image: ghcr.io/asya-sh/asya-sync:"+version+"\n") {
		t.Errorf("the chart pulled from the registry does not run the image of version %s:\n%s", version, rendered)
	}
}
