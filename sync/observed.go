package sync

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/status"
	"github.com/asya-sh/asya-sync/transport"
)

// statusInput is what the status is computed from: the assessment and
// what Metacontroller observed.
func (a *assessment) statusInput(now time.Time) status.Input {
	return status.Input{
		Actor:           a.actor,
		Workload:        a.observedWorkload(),
		KEDAMissing:     a.kedaMissing(),
		Standby:         a.standby,
		ScalingActive:   a.scalingActive,
		ScaledObject:    a.scaledObject(),
		Pods:            a.pods(),
		MissingSecrets:  a.missingSecrets(),
		SecretProblems:  a.secretProblems,
		QueueIdentifier: a.queueIdentifier(),
		QueueURL:        a.queueURL(),
		SpecProblems:    a.problems,
		Queue:           a.queue,
		Unwatched:       a.unwatched,
		Now:             now,
	}
}

func (a *assessment) observedWorkload() *status.Workload {
	if a.actor.Spec.Workload.Kind == v1alpha1.KindStatefulSet {
		if sts := hook.Get(a.req.Children.StatefulSets, a.actor.Name); sts != nil {
			return status.WorkloadFromStatefulSet(sts.Typed())
		}
		return nil
	}
	if d := hook.Get(a.req.Children.Deployments, a.actor.Name); d != nil {
		return status.WorkloadFromDeployment(d.Typed())
	}
	return nil
}

// heldBefore is the broker's last word on the actor's queues as its
// observed workload of the spec's kind carries it: nil when it stood by
// for no queue of another claim's.
func (a *assessment) heldBefore() *transport.Held {
	if a.actor.Spec.Workload.Kind == v1alpha1.KindStatefulSet {
		if sts := hook.Get(a.req.Children.StatefulSets, a.actor.Name); sts != nil {
			return children.HeldBefore(sts.Metadata.Annotations.QueueHeld)
		}
		return nil
	}
	if d := hook.Get(a.req.Children.Deployments, a.actor.Name); d != nil {
		return children.HeldBefore(d.Metadata.Annotations.QueueHeld)
	}
	return nil
}

// running is the runtime the actor's pods were given, read off its
// observed workload of the spec's kind and runtime ConfigMap; nil without
// such a workload.
func (a *assessment) running() *children.Running {
	cm := hook.Get(a.req.Children.ConfigMaps, children.RuntimeConfigMapName(a.actor.Name))
	if a.actor.Spec.Workload.Kind == v1alpha1.KindStatefulSet {
		if sts := hook.Get(a.req.Children.StatefulSets, a.actor.Name); sts != nil {
			return runningOf(&sts.Workload, cm)
		}
		return nil
	}
	if d := hook.Get(a.req.Children.Deployments, a.actor.Name); d != nil {
		return runningOf(&d.Workload, cm)
	}
	return nil
}

func runningOf[S any](w *hook.Workload[S], cm *hook.ConfigMap) *children.Running {
	tmpl := w.Spec.Template
	r := &children.Running{
		TemplateHash:   w.Metadata.Annotations.TemplateHash,
		Hash:           tmpl.Metadata.Annotations.RuntimeHash,
		TemplateScript: tmpl.Metadata.Annotations.RuntimeScript.Read,
	}
	if cm != nil {
		r.ConfigMapScript = cm.Data.RuntimeScript.Read
	}
	for _, c := range tmpl.Spec.InitContainers {
		if c.Name == children.RuntimeWriterContainer {
			r.WriterImage, r.WriterCommand = c.Image, c.Command
		}
	}
	return r
}

func (a *assessment) scaledObject() *kedav1alpha1.ScaledObject {
	if so := hook.Get(a.req.Children.ScaledObjects, a.actor.Name); so != nil {
		return so.Typed()
	}
	return nil
}

func (a *assessment) pods() []corev1.Pod {
	if a.podsRead != nil {
		return a.podsRead
	}
	if len(a.req.Related.Pods) == 0 {
		return nil
	}
	out := make([]corev1.Pod, 0, len(a.req.Related.Pods))
	for _, pod := range hook.Sorted(a.req.Related.Pods) {
		out = append(out, pod.Typed())
	}
	return out
}

// missingSecrets lists referenced Secrets that Metacontroller looked for
// and did not find. Without a Secret group nothing was looked for.
func (a *assessment) missingSecrets() []string {
	if a.req.Related.Secrets == nil {
		return nil
	}
	var missing []string
	for _, ref := range a.transport.SecretRefs() {
		if hook.Get(a.req.Related.Secrets, ref.Name) == nil && !slices.Contains(missing, ref.Name) {
			missing = append(missing, ref.Name)
		}
	}
	return missing
}

// queueURL is the queue's URL, where its transport gives queues one.
func (a *assessment) queueURL() string {
	if addr, ok := a.transport.Kind.(transport.Addresser); ok && a.found {
		return addr.QueueURL(transport.QueueOf(a.actor).Name())
	}
	return ""
}

// queueIdentifier is what identifies the queue on its transport (SQS: its
// ARN), else its name.
func (a *assessment) queueIdentifier() string {
	name := transport.QueueOf(a.actor).Name()
	if addr, ok := a.transport.Kind.(transport.Addresser); ok && a.found {
		return addr.QueueIdentifier(name)
	}
	return name
}

// checkSecrets lists the referenced Secret keys Metacontroller sent whose
// values the transport cannot use.
func (a *assessment) checkSecrets() []string {
	checker, ok := a.transport.Kind.(transport.SecretChecker)
	if !ok {
		return nil
	}
	var problems []string
	for _, ref := range a.transport.Kind.SecretRefs() {
		obj := hook.Get(a.req.Related.Secrets, ref.Name)
		if obj == nil {
			continue
		}
		value, found := obj.Data[ref.Key]
		if !found {
			continue // the kubelet reports a missing key on the pod
		}
		if err := checker.CheckSecret(ref, value); err != nil {
			problems = append(problems, fmt.Sprintf("Secret %q key %q: %v", ref.Name, ref.Key, err))
		}
	}
	return problems
}

// AnnotationLastApplied is where Metacontroller keeps what it last applied.
const AnnotationLastApplied = "metacontroller.k8s.io/last-applied-configuration"

// keepObserved answers with every observed child as it was last applied,
// so an invalid spec or a finalize changes and deletes nothing.
func keepObserved(req *hook.SyncRequest) ([]hook.Child, error) {
	observed, err := req.KeptChildren()
	if err != nil {
		return nil, err
	}
	out := make([]hook.Child, 0, len(observed))
	for _, child := range observed {
		out = append(out, hook.Kept(lastApplied(child)))
	}
	return out, nil
}

func lastApplied(child hook.KeptChild) map[string]any {
	if child.Applied != nil {
		return child.Applied
	}
	// Not applied by Metacontroller (adopted): keep what is there, minus
	// what the server owns.
	kept := child.Object.Object
	delete(kept, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences", "selfLink"} {
		unstructured.RemoveNestedField(kept, "metadata", f)
	}
	return kept
}
