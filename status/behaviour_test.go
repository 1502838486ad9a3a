package status

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

func TestLastScale(t *testing.T) {
	earlier := mtime("03:05:00")
	cases := []struct {
		name          string
		prevReady     *int32
		prevTime      *metav1.Time
		prevDirection string
		ready         int32
		wantTime      *metav1.Time
		wantDirection string
	}{
		{"more ready pods: up", ptr(int32(1)), &earlier, DirectionDown, 3, ptr(mtime("03:20:00")), DirectionUp},
		{"fewer ready pods: down", ptr(int32(3)), &earlier, DirectionUp, 1, ptr(mtime("03:20:00")), DirectionDown},
		{"same count: kept exactly", ptr(int32(2)), &earlier, DirectionUp, 2, &earlier, DirectionUp},
		{"from zero (a new actor's first pod): up", ptr(int32(0)), nil, "", 1, ptr(mtime("03:20:00")), DirectionUp},
		{"no previous count: not an event", nil, nil, "", 2, nil, ""},
		{"no previous count, earlier event kept", nil, &earlier, DirectionUp, 2, &earlier, DirectionUp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input()
			in.Now = t0.Add(400 * time.Millisecond) // stored times are whole seconds
			in.Actor.Spec.Workload.Replicas = ptr(tc.ready)
			in.Workload = deployment(tc.ready, tc.ready)
			in.Actor.Status = v1alpha1.AsyncActorStatus{ReadyReplicas: tc.prevReady, LastScaleTime: tc.prevTime, LastScaleDirection: tc.prevDirection}
			st := Compute(in).Status
			if !timesEqual(st.LastScaleTime, tc.wantTime) || st.LastScaleDirection != tc.wantDirection {
				t.Errorf("last scale = %v %q, want %v %q", st.LastScaleTime, st.LastScaleDirection, tc.wantTime, tc.wantDirection)
			}
		})
	}
}

func timesEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Time.Equal(b.Time)
}

// TestLastScaleAcrossCreation: a new actor's status reads 0 ready while it
// is Creating, so its first ready pod is recorded as a scale-up.
func TestLastScaleAcrossCreation(t *testing.T) {
	in := input()
	creating := Compute(in).Status
	in = withStatus(t, in, creating)
	in.Now = t0.Add(time.Minute)
	in.Workload = deployment(1, 1)
	st := Compute(in).Status
	if st.LastScaleTime == nil || !st.LastScaleTime.Time.Equal(in.Now) || st.LastScaleDirection != DirectionUp {
		t.Errorf("last scale = %v %q, want %s up", st.LastScaleTime, st.LastScaleDirection, in.Now)
	}
}

// TestHealthyStartWritesThreeTimes walks a new actor through what the
// Deployment controller and the kubelet report while its one pod comes up
// healthy, syncing after each report as Metacontroller does. Metacontroller
// writes the status whenever it changes: Creating, Updating, Running.
func TestHealthyStartWritesThreeTimes(t *testing.T) {
	starting := func(w *Workload) *Workload {
		w.ReadyReplicas, w.AvailableReplicas = 0, 0
		return w
	}
	steps := []struct {
		name     string
		workload *Workload
		pods     []string
	}{
		{"nothing observed", nil, nil},
		{"Deployment created, no status", &Workload{Kind: "Deployment", Name: "echo", Generation: 1, DesiredReplicas: ptr(int32(1))}, nil},
		{"Deployment observed, no pods", &Workload{Kind: "Deployment", Name: "echo", Generation: 1, ObservedGeneration: 1, DesiredReplicas: ptr(int32(1))}, nil},
		{"pod scheduled, sandbox starting", starting(deployment(1, 1)), []string{"sandbox-not-ready"}},
		{"containers started, not ready", starting(deployment(1, 1)), []string{"starting"}},
		{"pod ready, Deployment not caught up", starting(deployment(1, 1)), []string{"running"}},
		{"Deployment caught up", deployment(1, 1), []string{"running"}},
	}
	in := input()
	in.Now = at("03:16:00")
	var statuses []string
	var prev v1alpha1.AsyncActorStatus
	for _, step := range steps {
		in.Workload = step.workload
		in.Pods = pods(t, step.pods...)
		st := roundTrip(t, Compute(in).Status)
		if string(jsonOf(t, st)) != string(jsonOf(t, prev)) {
			statuses = append(statuses, st.Status+" ("+step.name+")")
		}
		prev = st
		in = withStatus(t, in, st)
	}
	if len(statuses) != 3 || prev.Status != Running {
		t.Errorf("status writes: %q; want Creating, Updating, Running", statuses)
	}
}

// TestCreatingEndsWithAFailure: a workload that cannot create its pods is
// not Creating but failing.
func TestCreatingEndsWithAFailure(t *testing.T) {
	in := input()
	in = withStatus(t, in, Compute(in).Status)
	in.Workload = &Workload{Kind: "Deployment", Name: "echo", Generation: 1, ObservedGeneration: 1, DesiredReplicas: ptr(int32(1)),
		Failure: &WorkloadFailure{Reason: "FailedCreate", Message: "exceeded quota"}}
	if got := Compute(in).Status.Status; got != WorkloadError {
		t.Errorf("got %s, want WorkloadError", got)
	}
}

// degradedInput has one of two pods not ready since 03:10:05.
func degradedInput(t *testing.T, now time.Time) Input {
	in := input()
	in.Actor.Spec.Workload.Replicas = ptr(int32(2))
	in.Workload = deployment(1, 2)
	in.Pods = pods(t, "running", "not-ready")
	in.Now = now
	return in
}

func TestDegradedWindow(t *testing.T) {
	cases := []struct {
		now        string
		wantStatus string
		wantResync time.Duration
	}{
		{"03:10:05", Updating, 5 * time.Minute},
		{"03:13:00", Updating, 2*time.Minute + 5*time.Second},
		{"03:15:04", Updating, time.Second},
		{"03:15:05", Degraded, 0},
		{"03:45:00", Degraded, 0},
	}
	for _, tc := range cases {
		t.Run(tc.now, func(t *testing.T) {
			r := Compute(degradedInput(t, at(tc.now)))
			if r.Status.Status != tc.wantStatus || r.ResyncAfter != tc.wantResync {
				t.Errorf("got %s, resync %s; want %s, resync %s", r.Status.Status, r.ResyncAfter, tc.wantStatus, tc.wantResync)
			}
		})
	}
}

// TestDegradedFollowsTheResync: written before the window closes, the
// status changes exactly when the resync it asked for comes.
func TestDegradedFollowsTheResync(t *testing.T) {
	in := degradedInput(t, at("03:12:00"))
	r := Compute(in)
	in = withStatus(t, in, r.Status)
	in.Now = in.Now.Add(r.ResyncAfter)
	if got := Compute(in).Status.Status; got != Degraded {
		t.Errorf("after the resync: %s, want Degraded", got)
	}
}

// TestDegradedWithoutPods: with no pods to look at, the window is measured
// from WorkloadReady turning False.
func TestDegradedWithoutPods(t *testing.T) {
	in := input()
	in.Actor.Spec.Workload.Replicas = ptr(int32(2))
	in.Workload = deployment(1, 2)
	in.Now = at("03:10:00")
	first := Compute(in)
	if first.Status.Status != Updating || first.ResyncAfter != DegradedAfter {
		t.Fatalf("first: %s resync %s", first.Status.Status, first.ResyncAfter)
	}
	in = withStatus(t, in, first.Status)
	in.Now = at("03:14:59")
	if got := Compute(in); got.Status.Status != Updating || got.ResyncAfter != time.Second {
		t.Errorf("before: %s resync %s", got.Status.Status, got.ResyncAfter)
	}
	in.Now = at("03:15:00")
	if got := Compute(in).Status.Status; got != Degraded {
		t.Errorf("after: %s", got)
	}
}

// TestLongRolloutIsNotDegraded: pods that each get ready within the window
// keep a long rollout Updating, however long it takes in all.
func TestLongRolloutIsNotDegraded(t *testing.T) {
	in := input()
	in.Actor.Spec.Workload.Replicas = ptr(int32(10))
	in.Workload = &Workload{Kind: "Deployment", Name: "echo", Generation: 2, ObservedGeneration: 2,
		DesiredReplicas: ptr(int32(10)), Replicas: 11, ReadyReplicas: 10, UpdatedReplicas: 7, AvailableReplicas: 10}
	in.Pods = pods(t, "running", "starting")
	// WorkloadReady has been False for twenty minutes of rollout.
	in.Actor.Status.Conditions = []metav1.Condition{{Type: ConditionWorkloadReady, Status: cFalse, Reason: "NotAllReady",
		LastTransitionTime: mtime("03:00:00"), ObservedGeneration: 1}}
	if got := Compute(in).Status.Status; got != Updating {
		t.Errorf("got %s, want Updating", got)
	}
}

func TestScalingReadyFromKEDA(t *testing.T) {
	ready := func(s metav1.ConditionStatus, reason, msg string) kedav1alpha1.Condition {
		return kedaCond(kedav1alpha1.ConditionReady, s, reason, msg)
	}
	cases := []struct {
		name       string
		so         *kedav1alpha1.ScaledObject
		noHPA      bool
		want       wantCond
		wantStatus string
	}{
		{"accepted", scaledObject(kedaReady()...), false,
			condIs(ConditionScalingReady, cTrue, "ScaledObjectReady"), Running},
		{"accepted, not active", scaledObject(ready(cTrue, "ScaledObjectReady", "ok"),
			kedaCond(kedav1alpha1.ConditionActive, cFalse, "ScalerNotActive", "Scaling is not performed because triggers are not active")), false,
			condIs(ConditionScalingReady, cTrue, "ScaledObjectReady"), Running},
		{"rejected", scaledObject(ready(cFalse, "ScaledObjectCheckFailed", "the workload echo is already managed by the ScaledObject other")), false,
			condIs(ConditionScalingReady, cFalse, "ScaledObjectCheckFailed", "KEDA: ScaledObject echo is not ready: the workload echo is already managed by the ScaledObject other"), ScalingError},
		{"Ready False without a reason", scaledObject(ready(cFalse, "", "broken")), false,
			condIs(ConditionScalingReady, cFalse, "ScaledObjectNotReady", "broken"), ScalingError},
		{"fallback in use", scaledObject(ready(cTrue, "ScaledObjectReady", "ok"),
			kedaCond(kedav1alpha1.ConditionFallback, cTrue, "FallbackExists", "At least one trigger is falling back on this scaled object")), false,
			condIs(ConditionScalingReady, cFalse, "FallbackActive", "uses its fallback replicas: At least one trigger is falling back"), ScalingError},
		{"initialized, not reported", scaledObject(ready(metav1.ConditionUnknown, "", ""),
			kedaCond(kedav1alpha1.ConditionActive, metav1.ConditionUnknown, "", "")), false,
			condIs(ConditionScalingReady, cFalse, "WaitingForKEDA", "KEDA has not reported ScaledObject echo ready yet"), Running},
		{"partly working", scaledObject(ready(metav1.ConditionUnknown, "PartialTriggerError", "Some triggers defined in ScaledObject are not working correctly")), false,
			condIs(ConditionScalingReady, cFalse, "WaitingForKEDA", "not reported ScaledObject echo ready yet: Some triggers"), Running},
		{"no conditions", scaledObject(), false,
			condIs(ConditionScalingReady, cFalse, "WaitingForKEDA"), Running},
		{"not observed", nil, false,
			condIs(ConditionScalingReady, cFalse, "WaitingForKEDA", "ScaledObject echo has not been created yet"), Running},
		{"no HPA yet", scaledObject(kedaReady()...), true,
			condIs(ConditionScalingReady, cFalse, "WaitingForHPA"), Running},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := keda(runningTwo(t), 2)
			in.ScaledObject = tc.so
			if tc.noHPA && in.ScaledObject != nil {
				in.ScaledObject.Status.HpaName = ""
			}
			st := Compute(in).Status
			checkCond(t, st.Conditions, tc.want)
			if st.Status != tc.wantStatus {
				t.Errorf("status %s, want %s", st.Status, tc.wantStatus)
			}
		})
	}
}

// TestKEDAGracePeriod: waiting for KEDA turns into a ScalingError once it
// has lasted KEDAGracePeriod, counted from ScalingReady turning False.
func TestKEDAGracePeriod(t *testing.T) {
	in := scaled(runningTwo(t))
	in.ScaledObject = scaledObject()
	in.Now = at("03:20:00")
	for _, step := range []struct {
		now        string
		wantStatus string
		wantResync time.Duration
	}{
		{"03:20:00", Running, KEDAPollInterval},
		{"03:21:55", Running, 5 * time.Second},
		{"03:22:00", ScalingError, 2 * time.Minute},
	} {
		in.Now = at(step.now)
		r := Compute(in)
		if r.Status.Status != step.wantStatus || r.ResyncAfter != step.wantResync {
			t.Errorf("%s: %s resync %s, want %s resync %s", step.now, r.Status.Status, r.ResyncAfter, step.wantStatus, step.wantResync)
		}
		in = withStatus(t, in, r.Status)
	}
	c := meta.FindStatusCondition(in.Actor.Status.Conditions, ConditionScalingReady)
	if c.Reason != "KEDANotResponding" || !c.LastTransitionTime.Time.Equal(at("03:20:00")) {
		t.Errorf("ScalingReady = %s since %s", c.Reason, c.LastTransitionTime)
	}
}

func TestScalingReadyOnlyWithScaling(t *testing.T) {
	in := keda(runningTwo(t), 2)
	in = withStatus(t, in, Compute(in).Status)
	in.Actor.Spec.Scaling.Enabled, in.ScalingActive = ptr(false), false
	in.ScaledObject = nil
	st := Compute(in).Status
	if meta.FindStatusCondition(st.Conditions, ConditionScalingReady) != nil {
		t.Errorf("ScalingReady kept after scaling was turned off: %+v", st.Conditions)
	}
	if st.ScalingMode != ScalingModeManual || st.ScaledObjectRef != nil {
		t.Errorf("scalingMode %s, scaledObjectRef %v", st.ScalingMode, st.ScaledObjectRef)
	}
}

// TestConditionTransitions: lastTransitionTime moves only when a
// condition's status flips, not when its reason or message changes; every
// condition carries the actor's generation; stray conditions are dropped.
func TestConditionTransitions(t *testing.T) {
	in := onePod("image-pull-backoff")(t)
	in.Actor.Generation = 4
	in.Actor.Status.Conditions = []metav1.Condition{{Type: "Available", Status: cTrue, Reason: "Old", LastTransitionTime: mtime("02:00:00")}}
	st := Compute(in).Status
	if len(st.Conditions) != 3 {
		t.Errorf("conditions: %+v", st.Conditions)
	}
	for _, c := range st.Conditions {
		if c.ObservedGeneration != 4 || !c.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s: generation %d, since %s", c.Type, c.ObservedGeneration, c.LastTransitionTime)
		}
	}

	// Same failure class, other reason: the time stays.
	in = withStatus(t, in, st)
	in.Now = t0.Add(time.Minute)
	in.Pods = pods(t, "err-image-pull")
	st = Compute(in).Status
	wr := meta.FindStatusCondition(st.Conditions, ConditionWorkloadReady)
	if wr.Reason != "ErrImagePull" || !wr.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("WorkloadReady %s since %s, want ErrImagePull since %s", wr.Reason, wr.LastTransitionTime, t0)
	}

	// Healthy: the condition flips, and the time with it.
	in = withStatus(t, in, st)
	in.Now = t0.Add(2 * time.Minute)
	in.Workload = deployment(1, 1)
	in.Pods = pods(t, "running")
	st = Compute(in).Status
	wr = meta.FindStatusCondition(st.Conditions, ConditionWorkloadReady)
	if wr.Status != cTrue || !wr.LastTransitionTime.Time.Equal(in.Now) {
		t.Errorf("WorkloadReady %s since %s, want True since %s", wr.Status, wr.LastTransitionTime, in.Now)
	}
	tr := meta.FindStatusCondition(st.Conditions, ConditionTransportReady)
	if !tr.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("TransportReady moved to %s", tr.LastTransitionTime)
	}
}

// TestBackoff: the retry delay is how long the failure has lasted, from
// MinBackoff to MaxBackoff.
func TestBackoff(t *testing.T) {
	since := at("03:00:00")
	for _, tc := range []struct {
		after, want time.Duration
	}{
		{0, MinBackoff},
		{3 * time.Second, MinBackoff},
		{10 * time.Second, 10 * time.Second},
		{80 * time.Second, 80 * time.Second},
		{time.Hour, MaxBackoff},
	} {
		in := input()
		in.Queue = QueueState{Reason: "BrokerUnavailable", Message: "dial tcp: connection refused"}
		in.Actor.Status.Conditions = []metav1.Condition{{Type: ConditionTransportReady, Status: cFalse,
			Reason: "BrokerUnavailable", LastTransitionTime: metav1.NewTime(since)}}
		in.Now = since.Add(tc.after)
		if got := Compute(in).ResyncAfter; got != tc.want {
			t.Errorf("after %s: resync %s, want %s", tc.after, got, tc.want)
		}
	}
}

// TestPodOrder: the status does not depend on the order pods are listed in.
func TestPodOrder(t *testing.T) {
	in := input()
	in.Workload = deployment(0, 3)
	in.Pods = pods(t, "runtime-crashloop", "sidecar-crashloop@echo-6f7c9d8b5-a0000", "runtime-oomkilled")
	want := string(jsonOf(t, Compute(in).Status))
	for i := 0; i < 3; i++ {
		slices.Reverse(in.Pods)
		in.Pods = append(in.Pods[1:], in.Pods[0])
		if got := string(jsonOf(t, Compute(in).Status)); got != want {
			t.Fatalf("order %d:\n%s\nwant\n%s", i, got, want)
		}
	}
	checkCond(t, Compute(in).Status.Conditions, condIs(ConditionWorkloadReady, cFalse, "CrashLoopBackOff",
		"pod echo-6f7c9d8b5-k3l9d: container asya-runtime", "(and 2 more failing pods)"))
}

func TestTerminationMessageIsBounded(t *testing.T) {
	p := loadPod(t, "runtime-crashloop")
	long := "Traceback (most recent call last):\n  File \"handler.py\", line 3\nValueError: " + strings.Repeat("é", 2000)
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated.Message = long
	in := input()
	in.Workload = deployment(0, 1)
	in.Pods = []corev1.Pod{p}
	msg := meta.FindStatusCondition(Compute(in).Status.Conditions, ConditionWorkloadReady).Message
	if len(msg) > 700 {
		t.Errorf("message is %d bytes", len(msg))
	}
	if !utf8.ValidString(msg) {
		t.Error("message cut inside a character")
	}
}

func TestWorkloadFromDeployment(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Generation: 3},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr(int32(4))},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 5, ReadyReplicas: 3,
			UpdatedReplicas: 2, AvailableReplicas: 3},
	}
	want := Workload{Kind: "Deployment", Name: "echo", Generation: 3, ObservedGeneration: 2,
		DesiredReplicas: ptr(int32(4)), Replicas: 5, ReadyReplicas: 3, UpdatedReplicas: 2, AvailableReplicas: 3}
	if got := WorkloadFromDeployment(d); string(jsonOf(t, got)) != string(jsonOf(t, want)) {
		t.Errorf("got %+v", got)
	}
	if WorkloadFromDeployment(nil) != nil {
		t.Error("nil Deployment")
	}
}

func TestWorkloadFromStatefulSet(t *testing.T) {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Generation: 1},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr(int32(2))},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2,
			UpdatedReplicas: 2, AvailableReplicas: 2},
	}
	want := Workload{Kind: "StatefulSet", Name: "echo", Generation: 1, ObservedGeneration: 1,
		DesiredReplicas: ptr(int32(2)), Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	if got := WorkloadFromStatefulSet(s); string(jsonOf(t, got)) != string(jsonOf(t, want)) {
		t.Errorf("got %+v", got)
	}
	if WorkloadFromStatefulSet(nil) != nil {
		t.Error("nil StatefulSet")
	}
}

// TestStoredTimesAreWholeSeconds: what is stored reads back unchanged
// from JSON, where Kubernetes keeps seconds only.
func TestStoredTimesAreWholeSeconds(t *testing.T) {
	in := input()
	in.Now = t0.Add(987 * time.Millisecond)
	in.Actor.Status.ReadyReplicas = ptr(int32(0))
	in.Workload = deployment(1, 1)
	st := Compute(in).Status
	for _, c := range st.Conditions {
		if c.LastTransitionTime.Nanosecond() != 0 {
			t.Errorf("%s at %s", c.Type, c.LastTransitionTime)
		}
	}
	if st.LastScaleTime == nil || st.LastScaleTime.Nanosecond() != 0 {
		t.Errorf("lastScaleTime %v", st.LastScaleTime)
	}
}

func TestQueueCounts(t *testing.T) {
	in := runningTwo(t)
	in.Queue.Queued = ptr(int64(42))
	st := Compute(in).Status
	if show(st.QueuedMessages) != "42" || st.ProcessingMessages != nil {
		t.Errorf("queued %s processing %s", show(st.QueuedMessages), show(st.ProcessingMessages))
	}
	if st.TransportStatus != TransportStatusReady || st.ScalingMode != ScalingModeManual {
		t.Errorf("transportStatus %s scalingMode %s", st.TransportStatus, st.ScalingMode)
	}
	want := v1alpha1.WorkloadReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "echo", Namespace: "default"}
	if st.WorkloadRef == nil || *st.WorkloadRef != want {
		t.Errorf("workloadRef %+v", st.WorkloadRef)
	}
}

// The Deployment controller's own verdicts are WorkloadErrors when no pod
// says more: pods it may not create, a rollout past its deadline.
func TestDeploymentFailures(t *testing.T) {
	quota := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: `pods "echo-6f7c9d8b5-x" is forbidden: exceeded quota: compute, requested: cpu=2, used: cpu=8, limited: cpu=8`}
	deadline := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		Message: `ReplicaSet "echo-6f7c9d8b5" has timed out progressing.`}
	podSecurity := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: `pods "echo-6f7c9d8b5-x" is forbidden: violates PodSecurity "restricted:latest": ` +
			`allowPrivilegeEscalation != false (container "asya-runtime" must set securityContext.allowPrivilegeEscalation=false)`}
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}
	tests := []struct {
		name    string
		conds   []appsv1.DeploymentCondition
		status  string
		ready   metav1.ConditionStatus
		reason  string
		message string
	}{
		{"quota", []appsv1.DeploymentCondition{progressing, quota}, WorkloadError, metav1.ConditionFalse, "FailedCreate",
			"Deployment echo: " + quota.Message},
		{"progress deadline", []appsv1.DeploymentCondition{deadline}, WorkloadError, metav1.ConditionFalse, "ProgressDeadlineExceeded",
			"Deployment echo: " + deadline.Message},
		{"quota wins over the deadline it causes", []appsv1.DeploymentCondition{deadline, quota}, WorkloadError, metav1.ConditionFalse, "FailedCreate",
			"Deployment echo: " + quota.Message},
		{"pod security names the rule and the container", []appsv1.DeploymentCondition{deadline, podSecurity}, WorkloadError, metav1.ConditionFalse, ReasonPodSecurity,
			`Deployment echo: the API server refuses its pods: violates PodSecurity "restricted:latest": ` +
				`allowPrivilegeEscalation != false (container "asya-runtime" must set securityContext.allowPrivilegeEscalation=false)`},
		{"healthy", []appsv1.DeploymentCondition{progressing}, Running, metav1.ConditionTrue, "AllReplicasReady", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "echo", Generation: 1},
				Spec:   appsv1.DeploymentSpec{Replicas: ptr(int32(2))},
				Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, Conditions: tt.conds}}
			in := input()
			in.Workload = WorkloadFromDeployment(d)
			got := Compute(in).Status
			if got.Status != tt.status {
				t.Errorf("status = %s, want %s", got.Status, tt.status)
			}
			checkCond(t, got.Conditions, condIs(ConditionWorkloadReady, tt.ready, tt.reason))
			if c := meta.FindStatusCondition(got.Conditions, ConditionWorkloadReady); tt.message != "" && c != nil && c.Message != tt.message {
				t.Errorf("message = %q, want %q", c.Message, tt.message)
			}
		})
	}
}
