package hook

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/asya-sh/asya-sync/api/flavor"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// SyncRequest is what a sync reads of Metacontroller's request, decoded in
// one pass. Observed objects come as the API server returns them, with
// managedFields, last-applied annotations and, in ConfigMaps, the runtime
// script: the views below name the few fields the hook reads, so the
// decoder skips everything else without building it.
//
// A group is nil when Metacontroller did not send it, and empty when it
// sent it without objects. Another group is one more field here and a
// view type below.
type SyncRequest struct {
	Parent json.RawMessage `json:"parent"`
	// Finalizing: the actor is being deleted (a finalize hook call, or a
	// sync of a CompositeController without one).
	Finalizing bool             `json:"finalizing,omitempty"`
	Children   ObservedChildren `json:"children"`
	Related    ObservedRelated  `json:"related"`
	// Actor is the parent, decoded once and defaulted (DecodeParent), and
	// SpecError says why its spec did not decode, if it did not.
	Actor     *v1alpha1.AsyncActor `json:"-"`
	SpecError error                `json:"-"`
	body      []byte
}

// ObservedChildren are the child groups the hook reads.
type ObservedChildren struct {
	Deployments   Group[Deployment]   `json:"Deployment.apps/v1"`
	StatefulSets  Group[StatefulSet]  `json:"StatefulSet.apps/v1"`
	ScaledObjects Group[ScaledObject] `json:"ScaledObject.keda.sh/v1alpha1"`
	ConfigMaps    Group[ConfigMap]    `json:"ConfigMap.v1"`
}

// ObservedRelated are the related groups the hook reads.
type ObservedRelated struct {
	Pods       Group[Pod]       `json:"Pod.v1"`
	Secrets    Group[Secret]    `json:"Secret.v1"`
	Namespaces Group[Namespace] `json:"Namespace.v1"`
	// AsyncActors are the actors that may claim the parent's queue: of its
	// name in every namespace, or of its namespace (customize).
	AsyncActors ActorGroup `json:"AsyncActor.asya.sh/v1alpha1"`
	// Flavors are the EnvironmentConfigs the actor's spec.flavors name.
	Flavors Group[EnvironmentConfig] `json:"EnvironmentConfig.apiextensions.crossplane.io/v1beta1"`
}

// ActorGroup is the related actors.
type ActorGroup map[string]*RelatedActor

// RelatedActor is a related actor as far as the ownership of a queue reads
// it: its metadata, and its spec left raw until List decodes what of it
// names the queue.
type RelatedActor struct {
	Object
	Spec json.RawMessage `json:"spec"`
}

// List decodes the group's actors, sorted by namespace and name, each as
// far as transport.Owner reads it: metadata, shape, transport, the
// Crossplane composition fields that can decide a flat actor's transport
// (ClaimFields.CompositionTransport), and actor. A
// field of the spec that does not decode costs the actor none of its
// claim: only the fields read here decide it.
func (g ActorGroup) List() []*v1alpha1.AsyncActor {
	out := make([]*v1alpha1.AsyncActor, 0, len(g))
	for _, r := range g {
		if r != nil {
			out = append(out, r.decoded())
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.AsyncActor) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

func (r *RelatedActor) decoded() *v1alpha1.AsyncActor {
	var claim struct {
		Transport           string                `json:"transport"`
		Actor               string                `json:"actor"`
		CompositionRef      *runtime.RawExtension `json:"compositionRef"`
		CompositionSelector *runtime.RawExtension `json:"compositionSelector"`
	}
	_ = unmarshalSpec(r.Spec, &claim)  // decodes what it can; a field that does not is the empty string
	gen, _ := v1alpha1.ShapeOf(r.Spec) // a spec that mixes shapes claims as a nested one, as it did before
	return &v1alpha1.AsyncActor{ObjectMeta: r.Metadata.objectMeta(), Spec: v1alpha1.AsyncActorSpec{
		Transport: claim.Transport, CurrentSpec: v1alpha1.CurrentSpec{Actor: claim.Actor}, AsyaGeneration: gen,
		ClaimFields: v1alpha1.ClaimFields{CompositionRef: claim.CompositionRef, CompositionSelector: claim.CompositionSelector}}}
}

// WatchedActor is an actor as a watch of the actors delivers it, read as
// far as a claimant list reads it (RelatedActor), with what the watch
// itself needs: its resourceVersion, and whether it is the bookmark that
// ends a watch's initial events.
type WatchedActor struct {
	RelatedActor
	// Actor is spec.actor: a flat actor's queue, whose twins claim it too.
	Actor            string
	ResourceVersion  string
	InitialEventsEnd bool
}

// watchedView is what a watch's actor is read for; the rest, status and
// most of metadata, is skipped without being built.
type watchedView struct {
	Metadata struct {
		ObjectMeta
		ResourceVersion string `json:"resourceVersion"`
		Annotations     struct {
			InitialEventsEnd string `json:"k8s.io/initial-events-end"`
		} `json:"annotations"`
	} `json:"metadata"`
	Spec   json.RawMessage `json:"spec"`
	Status skipped         `json:"status"`
}

func (v *watchedView) actor() *WatchedActor {
	var spec struct {
		Actor string `json:"actor"`
	}
	_ = unmarshal(v.Spec, &spec) // a spec.actor that is not a string names no queue
	return &WatchedActor{RelatedActor: RelatedActor{Object: Object{Metadata: v.Metadata.ObjectMeta}, Spec: v.Spec},
		Actor: spec.Actor, ResourceVersion: v.Metadata.ResourceVersion, InitialEventsEnd: v.Metadata.Annotations.InitialEventsEnd == "true"}
}

// DecodeWatchedActor reads one AsyncActor as a watch event carries it.
func DecodeWatchedActor(data []byte) (*WatchedActor, error) {
	var v watchedView
	if err := unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("decode AsyncActor: %w", err)
	}
	return v.actor(), nil
}

// DecodeWatchedActorList reads an AsyncActorList, one page of it: its
// items, its resourceVersion and where the next page continues.
func DecodeWatchedActorList(data []byte) (items []*WatchedActor, meta metav1.ListMeta, err error) {
	var list struct {
		Metadata metav1.ListMeta `json:"metadata"`
		Items    []*watchedView  `json:"items"`
	}
	if err := unmarshal(data, &list); err != nil {
		return nil, meta, fmt.Errorf("decode AsyncActorList: %w", err)
	}
	items = make([]*WatchedActor, 0, len(list.Items))
	for _, v := range list.Items {
		if v != nil {
			items = append(items, v.actor())
		}
	}
	return items, list.Metadata, nil
}

// KeyedByName reports whether any object is keyed by its bare name (hook
// version v1), where objects of one name in different namespaces
// overwrite each other.
func (g ActorGroup) KeyedByName() bool {
	for key := range g {
		if !strings.Contains(key, "/") {
			return true
		}
	}
	return false
}

// Object is the metadata every view reads.
type Object struct {
	Metadata ObjectMeta `json:"metadata"`
}

// ObjectMeta is the part of metadata the hook reads.
type ObjectMeta struct {
	Name              string       `json:"name"`
	UID               types.UID    `json:"uid"`
	Namespace         string       `json:"namespace"`
	Generation        int64        `json:"generation"`
	CreationTimestamp metav1.Time  `json:"creationTimestamp"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	// ManagedFields, a third of a realistic request, is read past.
	ManagedFields skipped `json:"managedFields"`
}

func (o *Object) meta() *ObjectMeta { return &o.Metadata }

// objectMeta is the typed form of what was read.
func (m ObjectMeta) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, Generation: m.Generation,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
}

// Workload is what the status reads of a Deployment or StatefulSet, and
// what its pods were given of the runtime script (docs/upgrade.md); S is
// the kind's status type.
type Workload[S any] struct {
	Metadata struct {
		ObjectMeta
		Annotations struct {
			// TemplateHash is children.AnnotationTemplateHash.
			TemplateHash string `json:"asya.sh/template-hash"`
			// QueueHeld is children.AnnotationQueueHeld.
			QueueHeld string `json:"asya.sh/queue-held-by"`
		} `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int32      `json:"replicas"`
		Template PodTemplate `json:"template"`
	} `json:"spec"`
	Status S `json:"status"`
}

func (w *Workload[S]) meta() *ObjectMeta { return &w.Metadata.ObjectMeta }

// PodTemplate is what a workload's pod template says of the runtime
// script: its hash and, delivered that way, the script itself
// (children.AnnotationRuntimeHash and AnnotationRuntimeScript), and the
// init containers, one of which may write it.
type PodTemplate struct {
	Metadata struct {
		Annotations struct {
			RuntimeHash   string `json:"asya.sh/runtime-hash"`
			RuntimeScript Script `json:"asya.sh/runtime-script"`
		} `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		InitContainers []Container `json:"initContainers"`
	} `json:"spec"`
}

// Container is a container's name, image and command.
type Container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
}

// Deployment is the workload as a Deployment.
type Deployment struct {
	Workload[appsv1.DeploymentStatus]
}

// Typed returns the fields read as an appsv1.Deployment.
func (d *Deployment) Typed() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: d.Metadata.objectMeta(),
		Spec: appsv1.DeploymentSpec{Replicas: d.Spec.Replicas}, Status: d.Status}
}

// StatefulSet is the workload as a StatefulSet.
type StatefulSet struct {
	Workload[appsv1.StatefulSetStatus]
}

// Typed returns the fields read as an appsv1.StatefulSet.
func (s *StatefulSet) Typed() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: s.Metadata.objectMeta(),
		Spec: appsv1.StatefulSetSpec{Replicas: s.Spec.Replicas}, Status: s.Status}
}

// ConfigMap is a ConfigMap child: the runtime script it holds
// (children.RuntimeScriptKey), the only key the hook reads.
type ConfigMap struct {
	Object
	Data struct {
		RuntimeScript Script `json:"asya_runtime.py"`
	} `json:"data"`
}

// ScaledObject is what the status reads of KEDA's verdict.
type ScaledObject struct {
	Object
	Status struct {
		Conditions kedav1alpha1.Conditions `json:"conditions"`
		// HpaName is set by KEDA once it has created the HPA.
		HpaName string `json:"hpaName"`
	} `json:"status"`
}

// Typed returns the fields read as a KEDA ScaledObject.
func (s *ScaledObject) Typed() *kedav1alpha1.ScaledObject {
	return &kedav1alpha1.ScaledObject{ObjectMeta: s.Metadata.objectMeta(),
		Status: kedav1alpha1.ScaledObjectStatus{Conditions: s.Status.Conditions, HpaName: s.Status.HpaName}}
}

// Pod is what the status reads of a pod: its phase, conditions and
// container states.
type Pod struct {
	Object
	Spec   skipped          `json:"spec"`
	Status corev1.PodStatus `json:"status"`
}

// Typed returns the fields read as a corev1.Pod.
func (p *Pod) Typed() corev1.Pod {
	return corev1.Pod{ObjectMeta: p.Metadata.objectMeta(), Status: p.Status}
}

// Secret is a referenced Secret: its data, whose values some transports
// check (transport.SecretChecker).
type Secret struct {
	Object
	Data map[string][]byte `json:"data"`
}

// Namespace is what the Pod Security check reads: the namespace's labels.
type Namespace struct {
	Metadata struct {
		ObjectMeta
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
}

func (n *Namespace) meta() *ObjectMeta { return &n.Metadata.ObjectMeta }

// Typed returns the fields read as a corev1.Namespace.
func (n *Namespace) Typed() *corev1.Namespace {
	meta := n.Metadata.objectMeta()
	meta.Labels = n.Metadata.Labels
	return &corev1.Namespace{ObjectMeta: meta}
}

// EnvironmentConfig is a flavor: a partial actor spec (api/flavor).
type EnvironmentConfig struct {
	Object
	Data json.RawMessage `json:"data"`
}

// FoundFlavors are the flavors sent, by name: none when none was.
func (r ObservedRelated) FoundFlavors() flavor.Found {
	out := flavor.Found{}
	for _, c := range r.Flavors {
		if c != nil {
			out[c.Metadata.Name] = c.Data
		}
	}
	return out
}

type viewer interface{ meta() *ObjectMeta }

// Group is one group of observed objects, keyed by name (hook v1) or
// namespace/name (hook v2).
type Group[T any] map[string]*T

// Get returns the object of the group with the given name, or nil.
func Get[T any, P interface {
	*T
	viewer
}](g Group[T], name string) *T {
	for _, obj := range g {
		if obj != nil && P(obj).meta().Name == name {
			return obj
		}
	}
	return nil
}

// Sorted returns the group's objects by namespace and name.
func Sorted[T any, P interface {
	*T
	viewer
}](g Group[T]) []*T {
	out := make([]*T, 0, len(g))
	for _, obj := range g {
		if obj != nil {
			out = append(out, obj)
		}
	}
	slices.SortFunc(out, func(a, b *T) int {
		ma, mb := P(a).meta(), P(b).meta()
		if c := strings.Compare(ma.Namespace, mb.Namespace); c != 0 {
			return c
		}
		return strings.Compare(ma.Name, mb.Name)
	})
	return out
}

// DecodeSyncRequest parses a sync request body in one pass. Its errors
// describe a malformed request, which the HTTP layer answers with 400.
func DecodeSyncRequest(body []byte) (*SyncRequest, error) {
	req := &SyncRequest{body: body}
	if err := decodeObject(body, req); err != nil {
		return nil, err
	}
	actor, specErr, err := DecodeParent(req.Parent, req.Related.FoundFlavors())
	if err != nil {
		return nil, err
	}
	req.Actor, req.SpecError = actor, specErr
	return req, nil
}

// KeptChild is an observed child as a sync that keeps it reads it: the
// configuration Metacontroller last applied to it and, only when there is
// none it can read (an adopted child), the whole object.
type KeptChild struct {
	Namespace, Name string
	// Applied is the last-applied configuration, decoded.
	Applied map[string]any
	// Object is the child in full when Applied is nil.
	Object *unstructured.Unstructured
}

// keptView reads of a child what keeping it needs and skips the rest: a
// finalize keeps every child, and decoding each in full was a quarter of
// its CPU (docs/performance.md).
type keptView struct {
	Metadata struct {
		Name        string `json:"name"`
		Namespace   string `json:"namespace"`
		Annotations struct {
			LastApplied *string `json:"metacontroller.k8s.io/last-applied-configuration"`
		} `json:"annotations"`
		ManagedFields skipped `json:"managedFields"`
	} `json:"metadata"`
	Spec   skipped `json:"spec"`
	Status skipped `json:"status"`
	Data   skipped `json:"data"`
}

// applied is the view's last-applied configuration, nil when it has none
// that is an object.
func (v *keptView) applied() map[string]any {
	var m map[string]any
	if raw := v.Metadata.Annotations.LastApplied; raw == nil || unmarshalV1([]byte(*raw), &m) != nil {
		return nil
	}
	return m
}

// KeptChildren reads every observed child as keeping it reads it, sorted
// by group, namespace and name. Only a child without a configuration
// Metacontroller applied has the request decoded again, in full.
func (r *SyncRequest) KeptChildren() ([]KeptChild, error) {
	var views struct {
		Children map[string]map[string]*keptView `json:"children"`
	}
	if err := unmarshal(r.body, &views); err != nil {
		return nil, err
	}
	var full struct {
		Children map[string]map[string]*unstructured.Unstructured `json:"children"`
	}
	var out []KeptChild
	for _, group := range slices.Sorted(maps.Keys(views.Children)) {
		start := len(out)
		for key, view := range views.Children[group] {
			if view == nil {
				continue
			}
			child := KeptChild{Namespace: view.Metadata.Namespace, Name: view.Metadata.Name, Applied: view.applied()}
			if child.Applied == nil {
				if full.Children == nil {
					if err := unmarshal(r.body, &full); err != nil {
						return nil, err
					}
				}
				child.Object = full.Children[group][key]
			}
			out = append(out, child)
		}
		slices.SortFunc(out[start:], func(a, b KeptChild) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
		})
	}
	return out, nil
}

// DecodeActorList reads an AsyncActorList as the API server answers a
// list: each item as far as ownership reads it, keyed namespace/name as
// hook version v2 keys related objects.
func DecodeActorList(data []byte) (ActorGroup, error) {
	var list struct {
		Items []*RelatedActor `json:"items"`
	}
	if err := unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("decode AsyncActorList: %w", err)
	}
	group := make(ActorGroup, len(list.Items))
	for _, a := range list.Items {
		if a != nil {
			group[a.Metadata.Namespace+"/"+a.Metadata.Name] = a
		}
	}
	return group, nil
}
