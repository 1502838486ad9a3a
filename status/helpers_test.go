package status

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// t0 is "now" in most cases; the pod fixtures are dated around it.
var t0 = at("03:20:00")

// at is a time on the fixtures' day.
func at(clock string) time.Time {
	t, err := time.Parse(time.RFC3339, "2026-01-02T"+clock+"Z")
	if err != nil {
		panic(err)
	}
	return t
}

func mtime(clock string) metav1.Time { return metav1.NewTime(at(clock)) }

func newActor() *v1alpha1.AsyncActor {
	a := &v1alpha1.AsyncActor{
		TypeMeta: metav1.TypeMeta{APIVersion: "asya.sh/v1alpha1", Kind: "AsyncActor"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "echo", Namespace: "default", Generation: 1, CreationTimestamp: mtime("03:00:00"),
		},
		Spec: v1alpha1.AsyncActorSpec{
			Transport: "rabbitmq",
			Workload: v1alpha1.WorkloadSpec{Template: v1alpha1.PodTemplate{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "asya-runtime", Image: "ghcr.io/acme/echo:1.2.0"}},
			}}},
		},
	}
	a.Spec = a.Spec.WithDefaults()
	return a
}

// input is a healthy-transport input for a new actor, without a workload.
func input() Input {
	return Input{Actor: newActor(), Queue: QueueState{Ready: true}, Now: t0}
}

// scaled turns KEDA scaling on and applied.
func scaled(in Input) Input {
	in.Actor.Spec.Scaling.Enabled = ptr(true)
	in.ScalingActive = true
	return in
}

// deployment is a settled Deployment with total pods of which ready are
// ready (and available).
func deployment(ready, total int32) *Workload {
	return &Workload{
		Kind: v1alpha1.KindDeployment, Name: "echo", Generation: 1, ObservedGeneration: 1,
		DesiredReplicas: ptr(total), Replicas: total, ReadyReplicas: ready,
		UpdatedReplicas: total, AvailableReplicas: ready,
	}
}

func loadPod(t *testing.T, fixture string) corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pods", fixture+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s: %v", fixture, err)
	}
	return p
}

// pods loads fixtures; "fixture@name" renames the pod, for several pods
// made from one fixture.
func pods(t *testing.T, fixtures ...string) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	for _, f := range fixtures {
		file, name, renamed := strings.Cut(f, "@")
		p := loadPod(t, file)
		if renamed {
			p.Name = name
		}
		out = append(out, p)
	}
	return out
}

func kedaCond(t kedav1alpha1.ConditionType, s metav1.ConditionStatus, reason, msg string) kedav1alpha1.Condition {
	return kedav1alpha1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

// kedaReady are the conditions KEDA sets on a ScaledObject it accepted.
func kedaReady() []kedav1alpha1.Condition {
	return []kedav1alpha1.Condition{
		kedaCond(kedav1alpha1.ConditionReady, metav1.ConditionTrue, "ScaledObjectReady", "ScaledObject is defined correctly and is ready for scaling"),
		kedaCond(kedav1alpha1.ConditionActive, metav1.ConditionTrue, "ScalerActive", "Scaling is performed because triggers are active"),
		kedaCond(kedav1alpha1.ConditionFallback, metav1.ConditionFalse, "NoFallbackFound", "No fallbacks are active on this scaled object"),
		kedaCond(kedav1alpha1.ConditionPaused, metav1.ConditionFalse, "", ""),
	}
}

func scaledObject(conds ...kedav1alpha1.Condition) *kedav1alpha1.ScaledObject {
	so := &kedav1alpha1.ScaledObject{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default", Generation: 1}}
	so.Status.Conditions = conds
	so.Status.HpaName = "keda-hpa-echo"
	return so
}

// keda is a scaled input whose ScaledObject KEDA accepted and whose HPA it
// reports, the HPA wanting desired replicas: it writes them into the
// workload's spec.replicas.
func keda(in Input, desired int32) Input {
	in = scaled(in)
	in.ScaledObject = scaledObject(kedaReady()...)
	if in.Workload != nil {
		in.Workload.DesiredReplicas = ptr(desired)
	}
	return in
}

// withStatus is in with the actor's status replaced, as Metacontroller
// would send it after writing st: through JSON, where times are whole
// seconds.
func withStatus(t *testing.T, in Input, st v1alpha1.AsyncActorStatus) Input {
	t.Helper()
	actor := *in.Actor
	actor.Status = roundTrip(t, st)
	in.Actor = &actor
	return in
}

func roundTrip(t *testing.T, st v1alpha1.AsyncActorStatus) v1alpha1.AsyncActorStatus {
	t.Helper()
	var out v1alpha1.AsyncActorStatus
	if err := json.Unmarshal(jsonOf(t, st), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// counts shows the replica fields in one line, for comparison.
func counts(st v1alpha1.AsyncActorStatus) string {
	return fmt.Sprintf("ready=%s total=%s pending=%s failing=%s desired=%s summary=%s",
		show(st.ReadyReplicas), show(st.TotalReplicas), show(st.PendingReplicas), show(st.FailingPods),
		show(st.DesiredReplicas), st.ReadyReplicasSummary)
}

func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// wantCond is what a condition must be; message lists fragments it must
// contain.
type wantCond struct {
	typ     string
	status  metav1.ConditionStatus
	reason  string
	message []string
}

func condIs(typ string, status metav1.ConditionStatus, reason string, message ...string) wantCond {
	return wantCond{typ, status, reason, message}
}

func checkCond(t *testing.T, conds []metav1.Condition, w wantCond) {
	t.Helper()
	c := meta.FindStatusCondition(conds, w.typ)
	if c == nil {
		t.Errorf("condition %s missing", w.typ)
		return
	}
	if c.Status != w.status || c.Reason != w.reason {
		t.Errorf("%s = %s/%s, want %s/%s (message %q)", w.typ, c.Status, c.Reason, w.status, w.reason, c.Message)
	}
	for _, frag := range w.message {
		if !strings.Contains(c.Message, frag) {
			t.Errorf("%s message %q does not contain %q", w.typ, c.Message, frag)
		}
	}
}
