// Package actorindex keeps the cluster's AsyncActors in memory, as far as
// the ownership of a queue reads them, from one watch of the API server,
// and answers the claimant lists of watch.namesakes read from it.
//
// A list by field selector costs the API server a scan of every actor in
// its scope, and a finalize lists on every call, so a fleet delete cost
// it O(actors²) (docs/performance.md). The index answers the same lists
// from memory, as fresh as the API server's watch cache that the lists
// read: the watch is fed from that cache. Until the watch has listed
// every actor, and while it is broken, the index lists from the API
// server as before.
package actorindex

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Lister lists AsyncActors by a field selector, in namespace or, when it
// is empty, in every namespace (sync.ActorLister).
type Lister interface {
	ListActors(ctx context.Context, namespace, fieldSelector string) (hook.ActorGroup, error)
}

// The selectable fields the claimant lists use, each with its index.
const (
	byName  = "metadata.name" // in every namespace: a nested actor's namesakes
	byActor = "spec.actor"    // in one namespace: a flat actor's twins
)

// Index is the actors of the cluster, from one watch.
type Index struct {
	informer cache.SharedIndexInformer
	fallback Lister
	// broken is set when a list or watch of the actors failed, and cleared
	// when a watch has caught up (mended): the index may have missed
	// changes meanwhile.
	broken atomic.Bool
}

// Client is a client of the AsyncActors with rc's credentials that
// decodes them as the index keeps them.
func Client(rc *rest.Config) (rest.Interface, error) {
	cfg := rest.CopyConfig(rc)
	cfg.GroupVersion, cfg.APIPath, cfg.NegotiatedSerializer = &v1alpha1.GroupVersion, "/apis", negotiated
	return rest.RESTClientFor(cfg)
}

// New watches the AsyncActors of every namespace through client (made by
// Client), and lists through fallback what the index cannot answer. Run
// starts the watch.
func New(client rest.Interface, fallback Lister) *Index {
	x := &Index{fallback: fallback}
	actors := func(opts *metav1.ListOptions) *rest.Request {
		req := client.Get().Resource(v1alpha1.Resource).VersionedParams(opts, metav1.ParameterCodec)
		if opts.TimeoutSeconds != nil {
			req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
		}
		return req
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := actors(&opts).Do(ctx).Get()
			if err != nil {
				x.broken.Store(true)
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			w, err := actors(&opts).Watch(ctx)
			if err != nil {
				x.broken.Store(true)
				return nil, err
			}
			return x.mended(w, opts), nil
		},
	}
	x.informer = cache.NewSharedIndexInformerWithOptions(lw, &entry{}, cache.SharedIndexInformerOptions{
		Indexers:          cache.Indexers{byName: nameOf, byActor: twinsKeyOf},
		ObjectDescription: "asyncactors.asya.sh",
	})
	_ = x.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		x.broken.Store(true)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return x
}

// mended clears broken once the watch has caught up: at once after a
// list, which the reflector has applied before it watches, or at the end
// of the initial events of a watch that lists (sendInitialEvents), which
// the reflector applies together.
func (x *Index) mended(w watch.Interface, opts metav1.ListOptions) watch.Interface {
	if opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
		x.broken.Store(false)
		return w
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type == watch.Bookmark && initialEventsEnd(e.Object) {
			x.broken.Store(false)
		}
		return e, true
	})
}

func initialEventsEnd(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// Run watches until ctx ends.
func (x *Index) Run(ctx context.Context) { x.informer.RunWithContext(ctx) }

// Ready: the index holds every actor and its watch is not broken.
func (x *Index) Ready() bool { return x.informer.HasSynced() && !x.broken.Load() }

// ListActors answers a list by metadata.name in every namespace, or by
// spec.actor in a namespace, from memory once the index is ready, and
// any other through the fallback.
func (x *Index) ListActors(ctx context.Context, namespace, fieldSelector string) (hook.ActorGroup, error) {
	if index, key, ok := lookup(namespace, fieldSelector); ok && x.Ready() {
		if objs, err := x.informer.GetIndexer().ByIndex(index, key); err == nil {
			return groupOf(objs), nil
		}
	}
	return x.fallback.ListActors(ctx, namespace, fieldSelector)
}

// lookup is the index and key that answer the list, if one does.
func lookup(namespace, fieldSelector string) (index, key string, ok bool) {
	sel, err := fields.ParseSelector(fieldSelector)
	if err != nil || len(sel.Requirements()) != 1 {
		return "", "", false
	}
	if name, ok := sel.RequiresExactMatch(byName); ok && namespace == "" {
		return byName, name, true
	}
	if actor, ok := sel.RequiresExactMatch(byActor); ok && namespace != "" {
		return byActor, namespace + "/" + actor, true
	}
	return "", "", false
}

// entry is what the index keeps of an actor: the metadata its keys need,
// and the actor as a claimant list returns it. It holds no managedFields,
// annotations or status.
type entry struct {
	metav1.ObjectMeta
	actor   string // spec.actor
	related *hook.RelatedActor
}

func (e *entry) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject is the entry itself: it is never changed once made.
func (e *entry) DeepCopyObject() runtime.Object { return e }

// entryFor is the entry of an actor a list or watch delivered; a
// bookmark's keeps its resourceVersion and whether it ends the initial
// events.
func entryFor(a *hook.WatchedActor) *entry {
	e := &entry{
		ObjectMeta: metav1.ObjectMeta{Name: a.Metadata.Name, Namespace: a.Metadata.Namespace, ResourceVersion: a.ResourceVersion},
		actor:      a.Actor,
		related:    &a.RelatedActor,
	}
	if a.InitialEventsEnd {
		e.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return e
}

func nameOf(obj any) ([]string, error) {
	e, ok := obj.(*entry)
	if !ok {
		return nil, nil
	}
	return []string{e.Name}, nil
}

func twinsKeyOf(obj any) ([]string, error) {
	e, ok := obj.(*entry)
	if !ok || e.actor == "" {
		return nil, nil
	}
	return []string{e.Namespace + "/" + e.actor}, nil
}

// groupOf is the entries as a list decodes them (hook.DecodeActorList).
func groupOf(objs []any) hook.ActorGroup {
	group := make(hook.ActorGroup, len(objs))
	for _, o := range objs {
		if e, ok := o.(*entry); ok {
			group[e.Namespace+"/"+e.Name] = e.related
		}
	}
	return group
}
