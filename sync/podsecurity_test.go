package sync

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
)

func TestPodSecurityProblems(t *testing.T) {
	compliant := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](1000),
	}
	namespace := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml", Labels: labels}}
	}
	restricted := namespace(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	baseline := namespace(map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	tests := []struct {
		name    string
		ns      *corev1.Namespace
		runtime *corev1.SecurityContext
		sidecar *corev1.SecurityContext // the actor's override
		want    []string                // substrings of the one problem; none: admitted
	}{
		{"namespace without labels", namespace(nil), nil, nil, nil},
		{"restricted, compliant runtime", restricted, compliant, nil, nil},
		{"restricted, root runtime", restricted, nil, nil, []string{
			`namespace "ml" would refuse the pods: violates PodSecurity "restricted:latest": `,
			`allowPrivilegeEscalation != false (container "asya-runtime" must set securityContext.allowPrivilegeEscalation=false)`,
			`unrestricted capabilities (container "asya-runtime" must set securityContext.capabilities.drop=["ALL"])`,
			`runAsNonRoot != true (pod or container "asya-runtime" must set securityContext.runAsNonRoot=true)`}},
		{"restricted, the actor's sidecar override", restricted, compliant, &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}, []string{
			`allowPrivilegeEscalation != false (container "asya-sidecar" must set`,
			`runAsUser=0 (container "asya-sidecar" must not set runAsUser=0)`}},
		{"restricted at a pinned version", namespace(map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "v1.30"}),
			nil, nil, []string{`violates PodSecurity "restricted:v1.30"`}},
		{"baseline, root runtime", baseline, nil, nil, nil},
		{"baseline, privileged runtime", baseline, &corev1.SecurityContext{Privileged: ptr.To(true)}, nil, []string{
			`violates PodSecurity "baseline:latest": privileged (container "asya-runtime" must not set securityContext.privileged=true)`}},
		{"unparsable level is enforced as restricted", namespace(map[string]string{"pod-security.kubernetes.io/enforce": "strict"}),
			nil, nil, []string{`violates PodSecurity "restricted:latest"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			actor := &v1alpha1.AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "ml"}}
			actor.Spec = v1alpha1.AsyncActorSpec{Transport: "mq", Workload: v1alpha1.WorkloadSpec{Template: v1alpha1.PodTemplate{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "asya-runtime", Image: "python:3.12", SecurityContext: tt.runtime}}}}}}
			actor.Spec.Sidecar.SecurityContext = tt.sidecar
			actor.Spec = actor.Spec.WithDefaults()
			tmpl := children.PodTemplate(children.Input{Actor: actor, Service: children.Service{SidecarSecurityContext: config.DefaultSidecarSecurityContext()},
				Transport: &rabbitmq.Settings{}})
			got := podSecurityProblems(tt.ns, tmpl, actor.Spec)
			if len(tt.want) == 0 {
				if len(got) != 0 {
					t.Errorf("problems = %q, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("problems = %q, want one", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("problem %q\nlacks %q", got[0], w)
				}
			}
			// What asya-sync adds passes: the sidecar by default, seccomp for the pod.
			for _, ours := range []string{`"asya-sidecar"`, "seccompProfile"} {
				if tt.sidecar == nil && strings.Contains(got[0], ours) {
					t.Errorf("problem %q names %s, which asya-sync sets", got[0], ours)
				}
			}
		})
	}
}
