package children

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
)

// TestGiven: for each delivery, the pods keep the runtime they run only
// when nothing but the runtime would roll them, the update is Pinned, and
// what they run is whole and speaks the current script's protocol.
func TestGiven(t *testing.T) {
	old := asyaruntime.NewScript("# old runtime\n")
	cur := asyaruntime.NewScript("# current runtime\n")
	httpScript := asyaruntime.NewScript("import http.server\n")
	for _, d := range deliveries {
		t.Run(string(d.name), func(t *testing.T) {
			base := func() Input {
				actor := &v1alpha1.AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "ns"},
					Spec: v1alpha1.AsyncActorSpec{Transport: "mq", Workload: v1alpha1.WorkloadSpec{Template: v1alpha1.PodTemplate{
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: v1alpha1.RuntimeContainer, Image: "app:1"}}}}}}.WithDefaults()}
				return Input{Actor: actor, Transport: &rabbitmq.Settings{},
					Service: Service{Runtime: RuntimeService{Script: cur, Delivery: d.name, Image: "asya-sync:2"}}}
			}
			// running is what pods given old (by asya-sync:1) show, in a
			// workload whose template is otherwise the current one.
			running := func(in Input) *Running {
				tmpl := podTemplate(in, Runtime{Script: cur, Image: "asya-sync:2"})
				return &Running{TemplateHash: TemplateHash(tmpl), Hash: old.Hash, ConfigMapScript: text(old.Source),
					TemplateScript: text(old.Source), WriterImage: "asya-sync:1", WriterCommand: writerCommand(cur)}
			}
			scripts := []asyaruntime.Delivery{asyaruntime.ConfigMap, asyaruntime.PodTemplate}
			all := append(scripts, asyaruntime.InitContainer)
			for _, tc := range []struct {
				name  string
				edit  func(*Input)
				keeps []asyaruntime.Delivery // the deliveries whose pods keep the old runtime
			}{
				{"pinned, only the runtime differs", func(*Input) {}, all},
				{"a new actor", func(in *Input) { in.Decided.Running = nil }, nil},
				{"immediate by the service", func(in *Input) { in.Service.Runtime.Update = asyaruntime.Immediate }, nil},
				{"immediate by the actor", func(in *Input) { in.Actor.Annotations = map[string]string{AnnotationRuntimeUpdate: "Immediate"} }, nil},
				{"the pods roll anyway", func(in *Input) { in.Decided.Running.TemplateHash = "another" }, nil},
				{"the pods run the current", func(in *Input) { r := in.Decided.Running; r.Hash, r.WriterImage = cur.Hash, "asya-sync:2" }, nil},
				{"another protocol", func(in *Input) {
					in.Service.Runtime.Script = httpScript
					in.Decided.Running.WriterCommand = writerCommand(httpScript)
				}, nil},
				// The writer's image holds the script: there is none to edit.
				{"a script edited by hand", func(in *Input) {
					in.Decided.Running.ConfigMapScript, in.Decided.Running.TemplateScript = text("# edited\n"), text("# edited\n")
				}, []asyaruntime.Delivery{asyaruntime.InitContainer}},
				// Only the init container runs a command.
				{"a writer of another command", func(in *Input) {
					in.Decided.Running.WriterCommand = []string{"/asya-sync", "write-runtime"}
				}, scripts},
			} {
				in := base()
				in.Decided.Running = running(in)
				tc.edit(&in)
				rt, pending := Given(in)
				if slices.Contains(tc.keeps, d.name) {
					if pending != d.impl.name(in.current()) || rt.Script.Hash != old.Hash {
						t.Errorf("%s: given %q (pending %q), want the running %q pending the current", tc.name, rt.Script.Hash, pending, old.Hash)
					}
				} else if pending != "" || rt != in.current() {
					t.Errorf("%s: given %q (pending %q), want the current %q", tc.name, rt.Script.Hash, pending, cur.Hash)
				}
			}
		})
	}
}

// text reads s, as Running reads an observed script.
func text(s string) func() asyaruntime.Script {
	return func() asyaruntime.Script { return asyaruntime.NewScript(s) }
}

// TestCheckDelivery: the configuration names a delivery asya-sync has, and
// gives it what it needs.
func TestCheckDelivery(t *testing.T) {
	for _, tc := range []struct {
		delivery asyaruntime.Delivery
		image    string
		err      string
	}{
		{asyaruntime.ConfigMap, "", ""},
		{asyaruntime.PodTemplate, "", ""},
		{asyaruntime.InitContainer, "asya-sync:1", ""},
		{asyaruntime.InitContainer, "", "runtimeImage: required with runtimeDelivery initContainer"},
		{"inline", "", `runtimeDelivery: "inline" is not configMap, podTemplate or initContainer`},
	} {
		err := CheckDelivery(tc.delivery, tc.image)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckDelivery(%q, %q) = %v, want %q", tc.delivery, tc.image, err, tc.err)
		}
	}
	if !ScriptInImage(asyaruntime.InitContainer) || ScriptInImage(asyaruntime.ConfigMap) {
		t.Error("only the init container runs the script of an image")
	}
}
