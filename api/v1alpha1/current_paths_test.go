package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

func TestFieldPath(t *testing.T) {
	flat := AsyncActorSpec{AsyaGeneration: Flat, Transport: "mq", CurrentSpec: CurrentSpec{
		Actor: "echo", Image: "python:3.12", Handler: "echo.handle",
		Env:            []corev1.EnvVar{{Name: "A", Value: "1"}},
		Volumes:        []runtime.RawExtension{{Raw: []byte(`{"name":"data","emptyDir":{}}`)}},
		InitContainers: []runtime.RawExtension{{Raw: []byte(`{"name":"fetch","image":"busybox"}`)}},
		Sidecars:       []runtime.RawExtension{{Raw: []byte(`{"name":"shipper","image":"busybox"}`)}},
	}}
	flat.Scaling.AdditionalTriggers = []Trigger{{Type: "cpu"}}
	const pod = "spec.workload.template.spec"
	for _, tc := range []struct {
		path  string
		parts []string
		want  string
	}{
		{pod + ".containers[name=asya-runtime].env", nil, "spec.env"},
		{pod + ".containers[name=asya-runtime].env", []string{pod + ".containers[name=asya-runtime].env[name=A]"}, "spec.env[name=A]"},
		{pod + ".containers[name=asya-runtime].volumeMounts[mountPath=/data]", nil, "spec.volumeMounts[mountPath=/data]"},
		{pod + ".containers[name=asya-runtime].resources.limits", nil, "spec.resources.limits"},
		{pod + ".containers[name=asya-runtime].image", nil, "spec.image"},
		{pod + ".containers[name=asya-runtime].imagePullPolicy", nil, "spec.imagePullPolicy"},
		{pod + ".containers[name=asya-runtime].command", nil, "the runtime container asya-runtime, which asya-sync builds"},
		{pod + ".containers[name=asya-sidecar].env", nil, "spec.sidecar.env"},
		{pod + ".containers[name=asya-sidecar].volumeMounts", nil, "the sidecar asya-sidecar, which asya-sync adds"},
		{pod + ".containers[name=asya-sidecar]", nil,
			"the sidecar asya-sidecar, which asya-sync adds with the service configuration's sidecarSecurityContext"},
		{pod + ".containers[name=shipper].env", nil, "spec.sidecars[name=shipper].env"},
		{pod + ".containers", nil, "spec.sidecars"},
		{pod + ".initContainers[name=fetch].ports", nil, "spec.initContainers[name=fetch].ports"},
		{pod + ".initContainers[name=asya-runtime-init]", nil, "the init container asya-runtime-init, which asya-sync adds"},
		{pod + ".initContainers", nil, "spec.initContainers"},
		{pod + ".volumes[name=data]", nil, "spec.volumes[name=data]"},
		{pod + ".volumes[name=socket-dir]", nil, "the volume socket-dir, which asya-sync adds"},
		{pod + ".volumes", nil, "spec.volumes"},
		{pod + ".tolerations", nil, "spec.tolerations"},
		{pod + ".nodeSelector", nil, "spec.nodeSelector"},
		{pod + ".securityContext", nil, "the pods' securityContext, which asya-sync sets"},
		{pod, nil, "the pods, which asya-sync builds"},
		{"spec.workload.template", []string{pod + ".containers[name=shipper]", pod + ".volumes[name=data]", pod + ".containers[name=shipper]"},
			"spec.sidecars[name=shipper], spec.volumes[name=data]"},
		{"spec.workload.replicas", nil, "spec.replicas"},
		{"spec.workload.pythonExecutable", nil, "spec.pythonExecutable"},
		{"spec.timeout.processing", nil, "spec.resiliency.actorTimeout"},
		{"spec.scaling.minReplicas", nil, "spec.scaling.minReplicaCount"},
		{"spec.scaling.maxReplicas", nil, "spec.scaling.maxReplicaCount"},
		{"spec.scaling.advanced.triggers[0].name", nil, "spec.scaling.additionalTriggers[0].name"},
		{"spec.scaling.advanced", []string{"spec.scaling.advanced.triggers"}, "spec.scaling.additionalTriggers"},
		{"spec.scaling.advanced", nil, "spec.scaling.advanced"},
		{"spec.scaling.queueLength", nil, "spec.scaling.queueLength"},
		{"spec.sidecar.image", nil, "spec.sidecar.image"},
		{"spec.transport", nil, "spec.transport"},
	} {
		if got := flat.FieldPath(tc.path, tc.parts...); got != tc.want {
			t.Errorf("flat FieldPath(%q, %q) = %q, want %q", tc.path, tc.parts, got, tc.want)
		}
		// A nested spec is the model: the path is named as it is, whole.
		if got := (AsyncActorSpec{}).FieldPath(tc.path, tc.parts...); got != tc.path {
			t.Errorf("nested FieldPath(%q, %q) = %q, want it unchanged", tc.path, tc.parts, got)
		}
	}
}
