//go:build e2e

package api

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

const (
	enforceLabel      = "pod-security.kubernetes.io/enforce"
	podSecurityMarker = "violates PodSecurity "
)

// TestPodSecurityRestricted runs every example actor in a namespace that
// enforces Pod Security "restricted". The API server's own admission of a
// Pod built from the actor's rendered pod template decides whether its
// runtime container is compliant; the hook must agree. A compliant actor
// gets its workload, and a Pod built from the workload's pod template as
// stored passes a server-side dry run there. A non-compliant one gets no
// workload and a WorkloadError that gives the API server's verdict, naming
// each rule and container.
func TestPodSecurityRestricted(t *testing.T) {
	ctx := testenv.CtxFor(t, 3*time.Minute)
	const ns = "e2e-restricted"
	testenv.EnsureNamespace(t, ctx, ns, true)
	nsObj := testenv.Obj{"apiVersion": "v1", "kind": "Namespace", "metadata": testenv.Obj{"name": ns, "labels": testenv.Obj{enforceLabel: "restricted"}}}
	if _, err := env.Cluster.Client.Apply(ctx, nsObj, "e2e"); err != nil {
		t.Fatalf("label namespace %s: %v", ns, err)
	}
	admitted, refused := 0, 0
	for _, ex := range testenv.Examples(t) {
		a, name := ex.Actor, testenv.Str(ex.Actor, "metadata", "name")
		testenv.MapAt(a, "metadata")["namespace"] = ns
		t.Run(filepath.Base(ex.File)+"/"+name, func(t *testing.T) {
			verdict := admission(t, ctx, renderedPodTemplate(t, ex.File, name), ns, name)
			if _, flat := testenv.MapAt(a, "spec")["actor"]; flat {
				// A flat spec cannot set the runtime's securityContext, so
				// in a restricted namespace the sync gives it the
				// restricted one; render, which sees no namespace, does
				// not. The stored workload must be admitted.
				verdict = ""
			}
			createActor(t, ctx, a)
			t.Cleanup(func() { env.Cluster.Client.Delete(context.Background(), testenv.ActorGVR(), ns, name) })
			kids := childrenOf(t, ctx, ns, name)
			workload := kids["Deployment/"+name]
			if workload == nil {
				workload = kids["StatefulSet/"+name]
			}
			ready := conditions(testenv.GetActor(t, ctx, ns, name))["WorkloadReady"]
			if verdict == "" {
				admitted++
				if workload == nil {
					t.Fatalf("the API server admits the pods, but no workload was built: WorkloadReady %s", testenv.MustJSON(ready))
				}
				if v := admission(t, ctx, testenv.MapAt(workload, "spec", "template"), ns, name); v != "" {
					t.Errorf("a Pod from the stored workload's template is refused: %s", v)
				}
				return
			}
			refused++
			t.Logf("the API server refuses the pods: %s%s", podSecurityMarker, verdict)
			if workload != nil {
				t.Errorf("the API server refuses the pods (%s), yet the workload was built", verdict)
			}
			if testenv.Str(ready, "reason") != "InvalidSpec" || !strings.Contains(testenv.Str(ready, "message"), verdict) {
				t.Errorf("WorkloadReady = %s\nwant reason InvalidSpec and the API server's verdict %q", testenv.MustJSON(ready), verdict)
			}
		})
	}
	if admitted == 0 || refused == 0 {
		t.Errorf("examples/: %d actors pass restricted and %d do not; want at least one of each", admitted, refused)
	}
}

// renderedPodTemplate is the pod template `asya-sync render` builds for the
// actor of file, with the service configuration of this run.
func renderedPodTemplate(t *testing.T, file, name string) testenv.Obj {
	t.Helper()
	cmd := exec.Command(env.SyncBin, "render", "-f", file, "--config", filepath.Join(env.Work, "asya-sync.yaml"))
	cmd.Env = append(cmd.Environ(), "ASYA_SYNC_CONFIG=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("asya-sync render -f %s: %v", file, err)
	}
	docs, err := testenv.SplitYAML(out, "render")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if k := testenv.Str(d, "kind"); (k == "Deployment" || k == "StatefulSet") && testenv.Str(d, "metadata", "name") == name {
			return testenv.MapAt(d, "spec", "template")
		}
	}
	t.Fatalf("render of %s has no workload %s", file, name)
	return nil
}

// admission creates, as a server-side dry run, a Pod in ns from the pod
// template, and returns the API server's Pod Security verdict: empty when
// admitted, else what follows "violates PodSecurity " in its refusal.
func admission(t *testing.T, ctx context.Context, template testenv.Obj, ns, name string) string {
	t.Helper()
	meta := testenv.MapAt(template, "metadata")
	pod := testenv.Obj{"apiVersion": "v1", "kind": "Pod",
		"metadata": testenv.Obj{"name": name + "-dry-run", "namespace": ns, "labels": meta["labels"], "annotations": meta["annotations"]},
		"spec":     testenv.MapAt(template, "spec")}
	_, err := env.Cluster.Client.Create(ctx, pod, true)
	if err == nil {
		return ""
	}
	_, verdict, ok := strings.Cut(err.Error(), podSecurityMarker)
	if !ok {
		t.Fatalf("dry-run Pod from %s's template: %v", name, err)
	}
	return verdict
}
