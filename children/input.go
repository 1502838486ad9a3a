// Package children builds the desired children of an AsyncActor. Every
// function here is pure: the same Input always gives the same objects.
package children

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	"github.com/asya-sh/asya-sync/transport"
)

// Input is everything the builders read: the service's settings, the
// actor as the call brings it, and what the sync decided for this call.
// Each field is set once, by the caller; nothing here changes them.
type Input struct {
	Service Service
	// Actor is the parent, with Spec already defaulted (WithDefaults).
	Actor *v1alpha1.AsyncActor
	// Transport is the kind of the actor's transport, configured.
	Transport transport.Kind
	// ClaimTemplates are the StatefulSet's volume claim templates, decoded
	// from spec.workload.volumeClaimTemplates.
	ClaimTemplates []corev1.PersistentVolumeClaim
	Decided        Decided
}

// Service is what the service's configuration says, alike for every actor.
type Service struct {
	// SidecarImage is the default sidecar of nested actors, and
	// FlatSidecarImage of flat ones.
	SidecarImage, FlatSidecarImage string
	// SidecarSecurityContext is the default sidecar securityContext; nil
	// sets none.
	SidecarSecurityContext *corev1.SecurityContext
	// GatewayURL is passed to sidecars as ASYA_GATEWAY_URL.
	GatewayURL string
	// Ends are the sink and sump, which end every route of a flat actor's
	// namespace.
	Ends    v1alpha1.Ends
	Runtime RuntimeService
}

// RuntimeService is how the service gives pods their runtime.
type RuntimeService struct {
	// Script is the nested actors' runtime, HTTPScript the flat actors'.
	Script, HTTPScript asyaruntime.Script
	// Delivery is how the script reaches the pods (delivery.go), and
	// Image the image the init container of InitContainer runs.
	Delivery asyaruntime.Delivery
	Image    string
	// Update is whether a new runtime waits for the pods' next roll
	// (Pinned, also when empty) or rolls them (Immediate). The actor's
	// AnnotationRuntimeUpdate overrides it.
	Update asyaruntime.Update
}

// Decided is what the sync decided, or observed, for this call.
type Decided struct {
	// ScalingActive: KEDA owns the replica count (spec.scaling.enabled, the
	// cluster has KEDA, the actor owns its queue), so the workload leaves
	// replicas to KEDA's HPA and a ScaledObject is built. Otherwise the
	// workload keeps spec.workload.replicas.
	ScalingActive bool
	// Standby is set when another actor owns the queue: the workload runs
	// no replicas and KEDA is not asked to scale it, so the actor consumes
	// nothing, yet everything else is built and the actor takes over as
	// soon as it owns the queue.
	Standby bool
	// Held is the broker's word that one of the actor's queues is another
	// claim's, when that is why it stands by (AnnotationQueueHeld).
	Held *transport.Held
	// Restricted: the actor's namespace enforces Pod Security
	// "restricted", which a flat spec cannot answer for its runtime.
	Restricted bool
	// Running is the runtime the pods were given, from the observed
	// children; nil when no workload is observed. It decides which runtime
	// the pods get (Given).
	Running *Running
}

// Label keys and values shared by all children.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelActor     = "asya.sh/asya"
	LabelApp       = "app"
	LabelWorkload  = "asya.sh/workload"
	ManagedBy      = "asya-sync"
)

// LabelMetacontrollerSelector is the label by which Metacontroller claims
// an actor's children (generateSelector): it sets it to the actor's uid.
const LabelMetacontrollerSelector = "controller-uid"

// ownLabelKeys are every label asya-sync sets on a child or a pod.
var ownLabelKeys = []string{LabelName, LabelManagedBy, LabelActor, LabelApp, LabelWorkload, v1alpha1.LabelFlatActor}

// Labels are the labels every child of the actor carries.
func Labels(actor string) map[string]string {
	return map[string]string{LabelName: actor, LabelManagedBy: ManagedBy, LabelActor: actor}
}

// objectMeta is the metadata of a child named name: the labels of every
// child over the actor's own that its generation copies, so that a user's
// label never replaces one of asya-sync's.
func (in Input) objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: in.Actor.Namespace,
		Labels: merged(in.generation().actorLabels(in), Labels(in.Actor.Name))}
}

// Child names, derived from the actor's name.
func RuntimeConfigMapName(actor string) string      { return actor + "-asya-runtime" }
func ServiceAccountName(actor string) string        { return "asya-" + actor }
func TriggerAuthenticationName(actor string) string { return actor + "-trigger-auth" }

// usesIRSA reports whether the actor's pods run as the IRSA ServiceAccount.
func (in Input) usesIRSA() bool { return in.Transport.PodRole() != "" }

// queue is the actor's queue on its transport.
func (in Input) queue() transport.Queue { return transport.QueueOf(in.Actor) }
