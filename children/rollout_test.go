package children

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTemplateHash: the hash leaves out exactly what the runtime puts in
// a pod template, so that it changes only when the pods would roll for
// another reason.
func TestTemplateHash(t *testing.T) {
	base := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				AnnotationRuntimeHash: "aaaa", AnnotationRuntimeScript: "# one\n", "team": "ml"}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: RuntimeWriterContainer, Image: "asya-sync:1.3.0"}, {Name: "fetch", Image: "busybox:1"}},
				Containers:     []corev1.Container{{Name: "asya-runtime", Image: "app:1"}},
			},
		}
	}
	want := TemplateHash(base())
	same := map[string]func(*corev1.PodTemplateSpec){
		"another runtime hash":   func(p *corev1.PodTemplateSpec) { p.Annotations[AnnotationRuntimeHash] = "bbbb" },
		"another script":         func(p *corev1.PodTemplateSpec) { p.Annotations[AnnotationRuntimeScript] = "# two\n" },
		"no script annotation":   func(p *corev1.PodTemplateSpec) { delete(p.Annotations, AnnotationRuntimeScript) },
		"another writer's image": func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers[0].Image = "asya-sync:1.4.0" },
	}
	for name, change := range same {
		p := base()
		change(&p)
		if got := TemplateHash(p); got != want {
			t.Errorf("%s changes the hash", name)
		}
	}
	differs := map[string]func(*corev1.PodTemplateSpec){
		"the user's image":             func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "app:2" },
		"the user's annotation":        func(p *corev1.PodTemplateSpec) { p.Annotations["team"] = "data" },
		"the user's init image":        func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers[1].Image = "busybox:2" },
		"the writer's command":         func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers[0].Command = []string{"/asya-sync"} },
		"no writer (another delivery)": func(p *corev1.PodTemplateSpec) { p.Spec.InitContainers = p.Spec.InitContainers[1:] },
	}
	for name, change := range differs {
		p := base()
		change(&p)
		if got := TemplateHash(p); got == want {
			t.Errorf("%s leaves the hash as it was", name)
		}
	}
	p := base()
	TemplateHash(p)
	if p.Annotations[AnnotationRuntimeHash] != "aaaa" || p.Spec.InitContainers[0].Image != "asya-sync:1.3.0" {
		t.Errorf("TemplateHash changed the template it was given: %+v", p)
	}
}
