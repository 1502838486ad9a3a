package children

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"

	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// Annotations of the runtime's rollout (docs/upgrade.md).
const (
	// AnnotationTemplateHash is on the workload itself, where a change
	// rolls no pods: TemplateHash of the pod template asya-sync last gave
	// it, so that a later sync can tell whether the pods roll anyway.
	AnnotationTemplateHash = "asya.sh/template-hash"
	// AnnotationRuntimePending is on the workload while its pods keep an
	// earlier runtime: the runtime asya-sync serves now, by hash, or by
	// image with runtimeDelivery initContainer.
	AnnotationRuntimePending = "asya.sh/runtime-pending"
	// AnnotationRuntimeUpdate on an AsyncActor overrides the service's
	// runtimeUpdate for that actor: Immediate or Pinned.
	AnnotationRuntimeUpdate = "asya.sh/runtime-update"
)

// Running is the runtime the actor's pods were given, as the observed
// children show it.
type Running struct {
	// TemplateHash is the workload's AnnotationTemplateHash; empty on a
	// workload built by a release that did not write it.
	TemplateHash string
	// Hash is the pod template's AnnotationRuntimeHash.
	Hash string
	// ConfigMapScript reads the script of the actor's runtime ConfigMap,
	// and TemplateScript the pod template's AnnotationRuntimeScript; nil
	// when there is none. They are read only while the pods run another
	// runtime than the current one: a steady sync decodes neither.
	ConfigMapScript, TemplateScript func() asyaruntime.Script
	// Writer is the pod template's RuntimeWriterContainer, if it has one:
	// its image and command.
	WriterImage   string
	WriterCommand []string
}

// Given is the runtime the actor's pods are given, and, when that is not
// the current one, the current one's name (AnnotationRuntimePending). The
// pods keep what they run in place of the current runtime when only the
// runtime would roll them: the workload exists and runs another runtime,
// the rest of its pod template is unchanged, the actor's runtime update is
// Pinned, and what the pods run can stand in for the current runtime
// (delivery.running). Otherwise the pods take the current runtime: a new
// actor, pods that roll for another reason, an actor or service that asks
// for Immediate.
func Given(in Input) (rt Runtime, pending string) {
	pods := PodsOf(in)
	return pods.Runtime, pods.Pending
}

// givenPods is Given's runtime with the pod template around it, built and
// hashed once: TemplateHash leaves the runtime out, so the template of
// the runtime the pods keep hashes as the current one's would, and tells
// whether they roll anyway.
func givenPods(in Input) Pods {
	rt, pending, kept := keptRuntime(in)
	pods := Pods{Template: podTemplate(in, rt), Runtime: rt, Pending: pending}
	pods.TemplateHash = TemplateHash(pods.Template)
	if r := in.Decided.Running; kept && r.TemplateHash != "" && r.TemplateHash != pods.TemplateHash {
		// The pods roll anyway; they take the current runtime with the rest.
		pods.Runtime, pods.Pending = in.current(), ""
		pods.Template = podTemplate(in, pods.Runtime)
	}
	return pods
}

// keptRuntime is the runtime the pods keep unless they roll for another
// reason (kept), else the current one.
func keptRuntime(in Input) (rt Runtime, pending string, kept bool) {
	d, cur, r := in.delivery(), in.current(), in.Decided.Running
	if r == nil || r.Hash == "" || in.runtimeUpdate() != asyaruntime.Pinned {
		return cur, "", false
	}
	observed := Runtime{Script: asyaruntime.Script{Hash: r.Hash}, Image: r.WriterImage}
	if r.Hash == cur.Script.Hash && d.name(observed) == d.name(cur) {
		return cur, "", false // the pods run the current runtime
	}
	running, ok := d.running(r, cur)
	if !ok {
		return cur, "", false
	}
	return running, d.name(cur), true
}

// runtimeUpdate is the actor's own choice, else the service's; Pinned
// unless one says Immediate. The sync refuses other values of the
// annotation.
func (in Input) runtimeUpdate() asyaruntime.Update {
	if u := asyaruntime.Update(in.Actor.Annotations[AnnotationRuntimeUpdate]); u.Valid() {
		return u
	}
	if in.Service.Runtime.Update == asyaruntime.Immediate {
		return asyaruntime.Immediate
	}
	return asyaruntime.Pinned
}

// workloadAnnotations are ours on the workload itself.
func (in Input) workloadAnnotations(pods Pods) map[string]string {
	a := map[string]string{AnnotationTemplateHash: pods.TemplateHash}
	if pods.Pending != "" {
		a[AnnotationRuntimePending] = pods.Pending
	}
	if in.Decided.Held != nil {
		a[AnnotationQueueHeld] = heldValue(in.Decided.Held)
	}
	return a
}

// TemplateHash is the hash of a pod template without its runtime: the
// runtime's hash and script annotations and the writer's image left out,
// so that it changes exactly when the pods roll for another reason.
func TemplateHash(tmpl corev1.PodTemplateSpec) string {
	t := tmpl // shallow: only the copies below are changed
	t.Annotations = make(map[string]string, len(tmpl.Annotations))
	for k, v := range tmpl.Annotations {
		if k != AnnotationRuntimeHash && k != AnnotationRuntimeScript {
			t.Annotations[k] = v
		}
	}
	t.Spec.InitContainers = slices.Clone(tmpl.Spec.InitContainers)
	for i := range t.Spec.InitContainers {
		if t.Spec.InitContainers[i].Name == RuntimeWriterContainer {
			t.Spec.InitContainers[i].Image = ""
		}
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "" // cannot happen for API types; no hash matches it, so the pods take the current runtime
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
