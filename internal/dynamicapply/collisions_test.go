package dynamicapply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestCollisionsOfTypedObjectsAsOfTheirJSON: an API object of Go types has
// the collisions of its unstructured form, path, key and entries alike,
// wherever the lists are: inline structs (a volume's source), omitted
// fields (a port without a name is keyed by containerPort), values that
// marshal themselves (quantities, IntOrString), maps and pointers.
func TestCollisionsOfTypedObjectsAsOfTheirJSON(t *testing.T) {
	items := []corev1.KeyToPath{{Key: "a", Path: "p"}, {Key: "b", Path: "p"}}
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "img",
			Env:           []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B"}, {Name: "A", Value: "2"}, {Name: "A", Value: "3"}},
			Ports:         []corev1.ContainerPort{{ContainerPort: 53, Protocol: "TCP"}, {ContainerPort: 53, Protocol: "UDP"}, {Name: "http", ContainerPort: 80}},
			VolumeMounts:  []corev1.VolumeMount{{Name: "v", MountPath: "/a"}, {Name: "w", MountPath: "/a"}},
			Resources:     corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
		}
	}
	deployment := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", OwnerReferences: []metav1.OwnerReference{{Name: "o", UID: "1"}, {Name: "o", UID: "2"}}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{
				Containers:     []corev1.Container{container("app"), container("app")},
				InitContainers: []corev1.Container{container("init")},
				Volumes: []corev1.Volume{
					{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{Items: items}}},
					{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
				HostAliases:      []corev1.HostAlias{{IP: "10.0.0.1"}, {IP: "10.0.0.1", Hostnames: []string{"x"}}},
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "s"}, {Name: "s"}},
				Tolerations:      []corev1.Toleration{{Key: "k"}, {Key: "k"}},
			},
		}},
	}
	scaled := &kedav1alpha1.ScaledObject{Spec: kedav1alpha1.ScaledObjectSpec{Triggers: []kedav1alpha1.ScaleTriggers{
		{Type: "rabbitmq", Name: "q", Metadata: map[string]string{"queueName": "a"}},
		{Type: "cron", Name: "q"},
	}}}
	auth := &kedav1alpha1.TriggerAuthentication{Spec: kedav1alpha1.TriggerAuthenticationSpec{SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{
		{Parameter: "id", Name: "aws", Key: "a"}, {Parameter: "secret", Name: "aws", Key: "b"},
	}}}
	none := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{{Name: "X"}}}, {Name: "b", Env: []corev1.EnvVar{{Name: "X"}}}},
	}}}}
	for name, typed := range map[string]runtime.Object{"deployment": deployment, "scaledobject": scaled, "triggerauthentication": auth, "none": none} {
		t.Run(name, func(t *testing.T) {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err != nil {
				t.Fatal(err)
			}
			want, got := Collisions(m), Collisions(typed)
			if name == "none" && len(want) != 0 || name != "none" && len(want) == 0 {
				t.Fatalf("the unstructured form has %d collisions", len(want))
			}
			if diff := cmp.Diff(messages(want), messages(got)); diff != "" {
				t.Errorf("Collisions of the typed object (-unstructured +typed):\n%s", diff)
			}
		})
	}
}

func messages(cs []Collision) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}
