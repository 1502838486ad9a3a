package sync

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/internal/dynamicapply"
)

// TestGoldenChildrenSurviveApply reads every golden sync and finalize
// response: no child may hold a list whose entries Metacontroller's apply
// would merge into one, and re-applying a child onto itself, as
// Metacontroller's first update after creating it does, must change
// nothing.
func TestGoldenChildrenSurviveApply(t *testing.T) {
	paths, err := filepath.Glob("../testdata/*/*/response.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden responses: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(path)))+"/"+filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var resp struct {
				Children []map[string]any `json:"children"`
			}
			if err := json.Unmarshal(data, &resp); err != nil {
				t.Fatal(err)
			}
			for _, child := range resp.Children {
				meta, _ := child["metadata"].(map[string]any)
				name := child["kind"].(string) + " " + meta["name"].(string)
				for _, c := range dynamicapply.Collisions(child) {
					t.Errorf("%s: %s", name, c)
				}
				if dynamicapply.Changes(child, child, child) {
					t.Errorf("%s changes when re-applied onto itself", name)
				}
			}
		})
	}
}

// TestRefusedWhereApplyWouldMerge: each pod template list a user can fill
// with two entries of one merge key is refused, naming both, and the
// observed children are kept. What asya-sync adds itself never collides
// with what the user wrote (their entries win, or ours are skipped).
func TestRefusedWhereApplyWouldMerge(t *testing.T) {
	runtime := func(pod *corev1.PodSpec) *corev1.Container { return &pod.Containers[0] }
	for _, tc := range []struct {
		name  string
		edit  func(pod *corev1.PodSpec)
		wants []string // in the one problem, "" for none
	}{
		{"env of one name", func(pod *corev1.PodSpec) {
			runtime(pod).Env = append(runtime(pod).Env, corev1.EnvVar{Name: "A", Value: "1"}, corev1.EnvVar{Name: "A", Value: "2"})
		}, []string{"containers[name=asya-runtime].env", `{"name":"A","value":"1"}`, `{"name":"A","value":"2"}`}},
		{"one port for TCP and UDP", func(pod *corev1.PodSpec) {
			runtime(pod).Ports = []corev1.ContainerPort{{ContainerPort: 53, Protocol: "TCP"}, {ContainerPort: 53, Protocol: "UDP"}}
		}, []string{"containers[name=asya-runtime].ports", "containerPort 53"}},
		{"two mounts at one path", func(pod *corev1.PodSpec) {
			pod.Volumes = []corev1.Volume{{Name: "a"}, {Name: "b"}}
			runtime(pod).VolumeMounts = []corev1.VolumeMount{{Name: "a", MountPath: "/data"}, {Name: "b", MountPath: "/data"}}
		}, []string{"containers[name=asya-runtime].volumeMounts", `mountPath "/data"`}},
		{"two volumes of one name", func(pod *corev1.PodSpec) {
			pod.Volumes = []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, {Name: "a"}}
		}, []string{"spec.workload.template.spec.volumes", `name "a"`}},
		{"an image pull secret twice", func(pod *corev1.PodSpec) {
			pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}, {Name: "registry"}}
		}, []string{"spec.workload.template.spec.imagePullSecrets", `name "registry"`}},
		{"two host aliases of one ip", func(pod *corev1.PodSpec) {
			pod.HostAliases = []corev1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"a"}}, {IP: "10.0.0.9", Hostnames: []string{"b"}}}
		}, []string{"spec.workload.template.spec.hostAliases", `ip "10.0.0.9"`}},
		{"an init container env of one name", func(pod *corev1.PodSpec) {
			pod.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Env: []corev1.EnvVar{{Name: "X"}, {Name: "X", Value: "y"}}}}
		}, []string{"initContainers[name=init].env"}},
		{"injected names the user also set: theirs win, no collision", func(pod *corev1.PodSpec) {
			runtime(pod).Env = append(runtime(pod).Env, corev1.EnvVar{Name: "ASYA_SOCKET_DIR", Value: "/elsewhere"})
			pod.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			runtime(pod).VolumeMounts = []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, h := loadCase(t, filepath.Join(casesDir, "invalid-keeps-children"))
			pod := &req.Actor.Spec.Workload.Template.Spec
			pod.Containers[0].Name = "asya-runtime"
			tc.edit(pod)
			resp, err := h.Answer(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			problems := conditionIn(resp, "WorkloadReady").Message
			if tc.wants == nil {
				if resp.Status.Status == "WorkloadError" {
					t.Fatalf("refused: %s", problems)
				}
				return
			}
			if resp.Status.Status != "WorkloadError" || strings.Count(problems, "Metacontroller's apply would merge them") != 1 {
				t.Fatalf("status %s: %s; want one InvalidSpec problem", resp.Status.Status, problems)
			}
			for _, want := range tc.wants {
				if !strings.Contains(problems, want) {
					t.Errorf("problem %q does not name %s", problems, want)
				}
			}
			// As the golden case of that name: every observed child as last applied.
			untouched, h := loadCase(t, filepath.Join(casesDir, "invalid-keeps-children"))
			kept, err := h.Answer(context.Background(), untouched)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(asJSON(t, kept.Children), asJSON(t, resp.Children)); diff != "" {
				t.Errorf("the observed children are not kept as last applied (-kept +got):\n%s", diff)
			}
		})
	}
}
