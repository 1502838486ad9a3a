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
	// ConfigMapScript is the script of the actor's runtime ConfigMap, and
	// TemplateScript the pod template's AnnotationRuntimeScript.
	ConfigMapScript, TemplateScript string
	// Writer is the pod template's RuntimeWriterContainer, if it has one:
	// its image and command.
	WriterImage   string
	WriterCommand []string
}

// KeepRunning returns in with the runtime the actor's pods run in place of
// the current one when only the runtime would roll them: the workload
// exists and runs another runtime, the rest of its pod template is
// unchanged, the actor's runtime update is Pinned, and what the pods run
// can stand in for the current runtime (keepable). Otherwise the pods take
// the current runtime: a new actor, pods that roll for another reason, an
// actor or service that asks for Immediate.
func KeepRunning(in Input) Input {
	r := in.Running
	if r == nil || r.Hash == "" || !in.runtimeDiffers() || in.runtimeUpdate() != asyaruntime.Pinned || !in.keepable() {
		return in
	}
	if r.TemplateHash != "" && r.TemplateHash != TemplateHash(PodTemplate(in)) {
		return in // the pods roll anyway; they take the current runtime with the rest
	}
	in.pending = in.runtimeName()
	in.RuntimeHash = r.Hash
	switch in.Runtime {
	case asyaruntime.InitContainer:
		in.RuntimeImage = r.WriterImage
	case asyaruntime.PodTemplate:
		in.RuntimeScript = r.TemplateScript
	default:
		in.RuntimeScript = r.ConfigMapScript
	}
	return in
}

// runtimeDiffers: the pods run another script than the current one or,
// with the init container, are given it by another image.
func (in Input) runtimeDiffers() bool {
	return in.Running.Hash != in.RuntimeHash ||
		(in.Runtime == asyaruntime.InitContainer && in.Running.WriterImage != in.RuntimeImage)
}

// runtimeUpdate is the actor's own choice, else the service's; Pinned
// unless one says Immediate. The sync refuses other values of the
// annotation.
func (in Input) runtimeUpdate() asyaruntime.Update {
	if u := asyaruntime.Update(in.Actor.Annotations[AnnotationRuntimeUpdate]); u.Valid() {
		return u
	}
	if in.RuntimeUpdate == asyaruntime.Immediate {
		return asyaruntime.Immediate
	}
	return asyaruntime.Pinned
}

// keepable: what the pods were given is whole and of the current
// runtime's generation. A script is kept only when it is the one the pod
// template's hash names (so not a ConfigMap edited by hand) and speaks the
// protocol the current script speaks; an init container only when it is
// run as the current one is, with the same command, which says the
// generation.
func (in Input) keepable() bool {
	r := in.Running
	switch in.Runtime {
	case asyaruntime.InitContainer:
		return r.WriterImage != "" && slices.Equal(r.WriterCommand, in.runtimeWriterCommand())
	case asyaruntime.PodTemplate:
		return in.sameScript(r.TemplateScript)
	default:
		return in.sameScript(r.ConfigMapScript)
	}
}

func (in Input) sameScript(src string) bool {
	return src != "" && asyaruntime.Hash(src) == in.Running.Hash &&
		asyaruntime.SpeaksHTTP(src) == asyaruntime.SpeaksHTTP(in.RuntimeScript)
}

// runtimeName names the current runtime in AnnotationRuntimePending: the
// init container's image, which holds the script, or the script's hash.
func (in Input) runtimeName() string {
	if in.Runtime == asyaruntime.InitContainer {
		return in.RuntimeImage
	}
	return in.RuntimeHash
}

// workloadAnnotations are ours on the workload itself.
func (in Input) workloadAnnotations(tmpl corev1.PodTemplateSpec) map[string]string {
	a := map[string]string{AnnotationTemplateHash: TemplateHash(tmpl)}
	if in.pending != "" {
		a[AnnotationRuntimePending] = in.pending
	}
	if in.Held != nil {
		a[AnnotationQueueHeld] = heldValue(in.Held)
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
