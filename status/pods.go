package status

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// podErrorOrder ranks the statuses a pod problem leads to, in Order: the
// first that applies to any pod is the actor's.
var podErrorOrder = slices.Clone(Order[slices.Index(Order, ImagePullError) : slices.Index(Order, WorkloadError)+1])

func rank(status string) int { return slices.Index(podErrorOrder, status) }

// isWorkloadError: the status is an error of the workload or its pods.
func isWorkloadError(status string) bool { return rank(status) >= 0 }

// podReport is what the actor's pods show.
type podReport struct {
	// worst is the highest-ranked problem of any pod; its message names
	// the pod and counts the other failing pods.
	worst *issue
	// failing counts live pods with at least one problem.
	failing int32
	// notReady is the live pod that has been not ready the longest.
	notReady *notReadyPod
	// startDeadline is how long until a pod waiting for its sandbox
	// crosses PodStartTimeout; 0 if none is waiting.
	startDeadline time.Duration
}

type notReadyPod struct {
	name    string
	since   time.Time
	message string
}

// analyzePods classifies the live pods. Pods being deleted and pods that
// have finished (Succeeded, or Failed such as evicted ones) are not part
// of the workload any more: their controller has replaced them.
func analyzePods(pods []corev1.Pod, now time.Time) podReport {
	var r podReport
	for _, pod := range livePods(pods) {
		problems, startIn := podProblems(pod, now)
		r.noteStart(startIn)
		r.noteNotReady(pod)
		if len(problems) == 0 {
			continue
		}
		r.failing++
		worst := problems[0]
		for _, p := range problems[1:] {
			if rank(p.status) < rank(worst.status) {
				worst = p
			}
		}
		if r.worst == nil || rank(worst.status) < rank(r.worst.status) {
			r.worst = &worst
		}
	}
	if r.worst != nil && r.failing > 1 {
		r.worst.message += fmt.Sprintf(" (and %d more failing %s)", r.failing-1, plural(r.failing-1, "pod"))
	}
	return r
}

// livePods are the pods that count, sorted by name so that the pod a
// message names does not depend on the order they were listed in. They
// point into pods: a pod is a kilobyte to copy.
func livePods(pods []corev1.Pod) []*corev1.Pod {
	live := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		live = append(live, p)
	}
	slices.SortFunc(live, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return live
}

func (r *podReport) noteStart(in time.Duration) {
	if in > 0 && (r.startDeadline == 0 || in < r.startDeadline) {
		r.startDeadline = in
	}
}

// noteNotReady remembers the pod that has been not ready the longest, by
// its Ready condition's lastTransitionTime (or its creation when the
// kubelet has not reported yet).
func (r *podReport) noteNotReady(pod *corev1.Pod) {
	ready := podCondition(pod, corev1.PodReady)
	if ready != nil && ready.Status == corev1.ConditionTrue {
		return
	}
	nr := notReadyPod{name: pod.Name, since: pod.CreationTimestamp.Time}
	if ready != nil {
		nr.message = ready.Message
		if !ready.LastTransitionTime.IsZero() {
			nr.since = ready.LastTransitionTime.Time
		}
	}
	if nr.since.IsZero() {
		return
	}
	if r.notReady == nil || nr.since.Before(r.notReady.since) {
		r.notReady = &nr
	}
}

// podProblems lists what is wrong with one pod, and how long until a pod
// still waiting for its sandbox is late.
func podProblems(pod *corev1.Pod, now time.Time) ([]issue, time.Duration) {
	var problems []issue
	if p := unschedulable(pod); p != nil {
		problems = append(problems, *p)
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if p := containerProblem(pod.Name, cs, true); p != nil {
			problems = append(problems, *p)
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if p := containerProblem(pod.Name, cs, false); p != nil {
			problems = append(problems, *p)
		}
	}
	if p := mountFailure(pod); p != nil {
		problems = append(problems, *p)
	}
	late, startIn := sandboxLate(pod, now)
	if late != nil {
		problems = append(problems, *late)
	}
	return problems, startIn
}

// unschedulable reads the scheduler's verdict: short of CPU, memory or pod
// slots is PendingResources, a volume that cannot be provided is a
// VolumeError, anything else (taints, affinity) a WorkloadError.
func unschedulable(pod *corev1.Pod) *issue {
	c := podCondition(pod, corev1.PodScheduled)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
		return nil
	}
	msg := fmt.Sprintf("pod %s cannot be scheduled: %s", pod.Name, c.Message)
	switch {
	case strings.Contains(c.Message, "Insufficient ") || strings.Contains(c.Message, "Too many pods"):
		return &issue{PendingResources, c.Reason, msg}
	case mentionsVolume(c.Message):
		return &issue{VolumeError, c.Reason, msg}
	}
	return &issue{WorkloadError, c.Reason, msg}
}

// Waiting reasons the kubelet reports for containers that cannot run.
const (
	reasonImagePullBackOff           = "ImagePullBackOff"
	reasonErrImagePull               = "ErrImagePull"
	reasonInvalidImageName           = "InvalidImageName"
	reasonErrImageNeverPull          = "ErrImageNeverPull"
	reasonCrashLoopBackOff           = "CrashLoopBackOff"
	reasonCreateContainerConfigError = "CreateContainerConfigError"
	reasonCreateContainerError       = "CreateContainerError"
	reasonRunContainerError          = "RunContainerError"
	reasonPreStartHookError          = "PreStartHookError"
	reasonPostStartHookError         = "PostStartHookError"
)

// containerProblem classifies one container's state. Waiting reasons that
// are part of a normal start (ContainerCreating, PodInitializing) are not
// problems.
func containerProblem(pod string, cs corev1.ContainerStatus, init bool) *issue {
	who := fmt.Sprintf("pod %s: container %s", pod, cs.Name)
	if init {
		who = fmt.Sprintf("pod %s: init container %s", pod, cs.Name)
	}
	if w := cs.State.Waiting; w != nil {
		return waitingProblem(who, cs, w, init)
	}
	if t := cs.State.Terminated; init && t != nil && t.ExitCode != 0 {
		return &issue{WorkloadError, "InitContainerFailed", who + " failed: " + exitDescription(t)}
	}
	return nil
}

func waitingProblem(who string, cs corev1.ContainerStatus, w *corev1.ContainerStateWaiting, init bool) *issue {
	switch w.Reason {
	case reasonImagePullBackOff, reasonErrImagePull, reasonInvalidImageName, reasonErrImageNeverPull:
		// The kubelet's message names the image and the registry's answer.
		return &issue{ImagePullError, w.Reason, who + ": " + nonEmpty(w.Message, fmt.Sprintf("cannot pull image %q", cs.Image))}
	case reasonCrashLoopBackOff:
		return &issue{crashStatus(cs.Name, init), w.Reason, who + " keeps crashing: " + lastExit(cs)}
	case reasonCreateContainerConfigError, reasonCreateContainerError:
		return &issue{createFailureStatus(w), w.Reason, who + ": " + w.Message}
	case reasonRunContainerError, reasonPreStartHookError, reasonPostStartHookError:
		return &issue{WorkloadError, w.Reason, who + ": " + w.Message}
	}
	return nil
}

// crashStatus names who is at fault for a crash loop: the user's handler
// (the runtime), the sidecar, or some other container of the template.
func crashStatus(container string, init bool) string {
	switch {
	case init:
		return WorkloadError
	case container == v1alpha1.RuntimeContainer:
		return RuntimeError
	case container == v1alpha1.SidecarContainer:
		return SidecarError
	}
	return WorkloadError
}

// createFailureStatus tells a volume the kubelet could not mount (a
// subPath, say) from a ConfigMap or Secret that does not exist.
func createFailureStatus(w *corev1.ContainerStateWaiting) string {
	switch {
	case mentionsVolume(w.Message):
		return VolumeError
	case mentionsMissingConfig(w.Message), w.Reason == reasonCreateContainerConfigError:
		return ConfigError
	}
	return WorkloadError
}

// mountFailure finds a mount failure the kubelet put into a pod condition.
func mountFailure(pod *corev1.Pod) *issue {
	for _, c := range pod.Status.Conditions {
		if c.Status == corev1.ConditionFalse && mentionsMount(c.Message) {
			return &issue{VolumeError, nonEmpty(c.Reason, "FailedMount"), fmt.Sprintf("pod %s: %s", pod.Name, c.Message)}
		}
	}
	return nil
}

// sandboxLate reports a scheduled pod whose sandbox is still not ready
// after PodStartTimeout. The kubelet creates the sandbox only once every
// volume is mounted, and a mount failure shows only in events, so this is
// how pod status reveals it. It also returns how long until a pod that is
// still within the timeout becomes late.
func sandboxLate(pod *corev1.Pod, now time.Time) (*issue, time.Duration) {
	scheduled := podCondition(pod, corev1.PodScheduled)
	started := podCondition(pod, corev1.PodReadyToStartContainers)
	if scheduled == nil || scheduled.Status != corev1.ConditionTrue ||
		started == nil || started.Status != corev1.ConditionFalse || started.LastTransitionTime.IsZero() {
		return nil, 0
	}
	if left := started.LastTransitionTime.Add(PodStartTimeout).Sub(now); left > 0 {
		return nil, left
	}
	return &issue{VolumeError, "ContainersNotStarted", fmt.Sprintf(
		"pod %s: containers not started %s after scheduling: the pod sandbox is not ready, most often because a volume cannot be mounted (see the pod's events)",
		pod.Name, PodStartTimeout)}, 0
}

// lastExit describes the previous run of a crash-looping container from
// its last termination, which, unlike the kubelet's back-off message,
// stays the same from one restart to the next.
func lastExit(cs corev1.ContainerStatus) string {
	if t := cs.LastTerminationState.Terminated; t != nil {
		return exitDescription(t)
	}
	return "back-off restarting failed container"
}

func exitDescription(t *corev1.ContainerStateTerminated) string {
	d := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Reason != "" {
		d += " (" + t.Reason + ")"
	}
	if msg := tail(lastLine(t.Message), maxTerminationMessage); msg != "" {
		d += ": " + msg
	}
	return d
}

// maxTerminationMessage bounds what a container's termination message adds.
const maxTerminationMessage = 512

// lastLine of a termination message, which is often a log tail or a
// traceback: its last line names the error.
func lastLine(msg string) string {
	msg = strings.TrimSpace(msg)
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		return strings.TrimSpace(msg[i+1:])
	}
	return msg
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return "..." + s[start:]
}

func mentionsVolume(msg string) bool {
	l := strings.ToLower(msg)
	return strings.Contains(l, "volume") || strings.Contains(l, "subpath") || mentionsMount(msg)
}

func mentionsMount(msg string) bool {
	l := strings.ToLower(msg)
	return strings.Contains(l, "mountvolume") || strings.Contains(l, "mount volume") || strings.Contains(l, "unable to attach or mount")
}

func mentionsMissingConfig(msg string) bool {
	l := strings.ToLower(msg)
	return (strings.Contains(l, "secret") || strings.Contains(l, "configmap")) &&
		(strings.Contains(l, "not found") || strings.Contains(l, "couldn't find"))
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func plural(n int32, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func nonEmpty(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}
