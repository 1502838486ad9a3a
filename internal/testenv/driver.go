//go:build e2e

package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asya-sh/asya-sync/internal/dynamicapply"
)

// The driver plays Metacontroller's part for the CompositeController in
// manifests/: it reads the parent, claims the children it owns, asks the
// customize hook for related objects, calls sync or finalize, applies the
// answer and writes the parent's status, the way Metacontroller's
// CompositeController does (generateSelector, InPlace updates, finalizer,
// status replaced whole with observedGeneration added). It applies
// children with either of Metacontroller's apply strategies (ApplyStrategy).

const (
	lastAppliedAnnotation = "metacontroller.k8s.io/last-applied-configuration"
	controllerUIDLabel    = "controller-uid"
	fieldManager          = "metacontroller"
)

// ApplyStrategy is Metacontroller's --apply-strategy, as its documentation
// ("Apply Semantics") describes them:
//   - DynamicApply, the default: a child is created as given, with the
//     last-applied annotation; an observed one is updated with a three-way
//     merge of the observed object, that annotation and the desired object,
//     lists of objects merged as maps by their conventional key
//     (internal/dynamicapply), and the update is sent only when the merge
//     changes the observed object;
//   - ServerSideApply: the desired object is sent as a server-side apply,
//     and no annotation is written.
type ApplyStrategy string

const (
	DynamicApply    ApplyStrategy = "dynamic-apply"
	ServerSideApply ApplyStrategy = "server-side-apply"
)

// strategyFromEnv is the strategy ASYA_E2E_APPLY_STRATEGY names, by default
// dynamic apply.
func strategyFromEnv() (ApplyStrategy, error) {
	switch s := ApplyStrategy(os.Getenv("ASYA_E2E_APPLY_STRATEGY")); s {
	case "":
		return DynamicApply, nil
	case DynamicApply, ServerSideApply:
		return s, nil
	default:
		return "", fmt.Errorf("ASYA_E2E_APPLY_STRATEGY=%q: want %s or %s", s, DynamicApply, ServerSideApply)
	}
}

// Driver plays Metacontroller's part for one CompositeController (above).
type Driver struct {
	kube   *Kube
	cc     Obj // the CompositeController, as Metacontroller sends it
	Parent GVR
	Kids   []GVR // child resources, in the CompositeController's order
	Hooks  map[string]*webhook
	// Mu guards cc, hooks and stopped, which follow replaces when the
	// CompositeController's spec changes.
	Mu *sync.RWMutex
	// stopped says why the webhooks could not be resolved after the last
	// change: Metacontroller then runs no controller and calls no hook.
	stopped error
	// Dial, when set, connects every webhook, for hook URLs that name a
	// Service the test serves on loopback.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Read is where the driver reads objects: the API server itself, or a
	// cache that watches keep current, as Metacontroller's informers do.
	Read     reader
	Strategy ApplyStrategy

	// What Metacontroller also does, which tests that run one pass at a
	// time leave off:
	//   - CustomizeCache keeps the customize answer per parent UID and
	//     generation and calls the hook again only for a new generation;
	//   - SkipUnchanged leaves a child alone when applying it would change
	//     nothing (every desired field is already there, with the same
	//     last-applied annotation), as Metacontroller skips the update when
	//     its three-way merge gives the observed object back. Finalize
	//     passes do so always.
	CustomizeCache *CustomizeCache
	SkipUnchanged  bool
	// Answered, when set, may change a sync or finalize answer before the
	// driver acts on it: a measurement's stand-in for a different hook.
	Answered func(hook string, req Obj, resp *HookResponse)
}

// reader reads objects as maps. The caller may change the top level of
// what it gets, and all of what get returns; below the top level, listed
// objects may be shared and are read only.
type reader interface {
	Get(ctx context.Context, r GVR, ns, name string) (Obj, error)
	List(ctx context.Context, r GVR, ns, labelSelector string) ([]Obj, error)
}

// CustomizeCache keeps the customize answers, as Metacontroller does.
type CustomizeCache struct {
	mu      sync.Mutex
	Answers map[string]CustomizeEntry // by parent UID
}

// CustomizeEntry is one parent's customize answer, for its generation.
type CustomizeEntry struct {
	generation any
	rules      []relatedRule
}

// HookResponse is a sync or finalize answer.
type HookResponse struct {
	Status             Obj     `json:"status"`
	Children           []Obj   `json:"children"`
	ResyncAfterSeconds float64 `json:"resyncAfterSeconds"`
	Finalized          bool    `json:"finalized"`
}

type relatedRule struct {
	APIVersion    string `json:"apiVersion"`
	Resource      string `json:"resource"`
	LabelSelector *struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"labelSelector"`
	Namespace string   `json:"namespace"`
	Names     []string `json:"names"`
}

// NewDriver is a driver of the CompositeController cc, which it resolves
// the hooks of, with the apply strategy ASYA_E2E_APPLY_STRATEGY names.
func NewDriver(ctx context.Context, k *Kube, cc Obj) (*Driver, error) {
	strategy, err := strategyFromEnv()
	if err != nil {
		return nil, err
	}
	d := &Driver{kube: k, Read: k, cc: cc, Strategy: strategy, Mu: &sync.RWMutex{}}
	if d.Hooks, err = d.resolveHooks(ctx, cc); err != nil {
		return nil, err
	}
	pr := MapAt(cc, "spec", "parentResource")
	if d.Parent, err = k.byResource(ctx, Str(pr, "apiVersion"), Str(pr, "resource")); err != nil {
		return nil, err
	}
	list, _ := Field(cc, "spec", "childResources").([]any)
	for _, c := range list {
		cr := c.(Obj)
		r, err := k.byResource(ctx, Str(cr, "apiVersion"), Str(cr, "resource"))
		if err != nil {
			return nil, fmt.Errorf("child resource: %w", err)
		}
		if m := Str(cr, "updateStrategy", "method"); m != "InPlace" {
			return nil, fmt.Errorf("child resource %s: the driver implements InPlace only, got %q", r.Resource, m)
		}
		d.Kids = append(d.Kids, r)
	}
	return d, nil
}

// resolveHooks reads the connection of every webhook of cc, the Secrets it
// names included, as Metacontroller does when it builds a controller.
func (d *Driver) resolveHooks(ctx context.Context, cc Obj) (map[string]*webhook, error) {
	hooks := map[string]*webhook{}
	for _, h := range []string{"customize", "sync", "finalize"} {
		wh, err := NewWebhook(ctx, d.kube, MapAt(cc, "spec", "hooks", h, "webhook"))
		if err != nil {
			return nil, fmt.Errorf("%s hook: %w", h, err)
		}
		if d.Dial != nil {
			wh.Client.Transport.(*http.Transport).DialContext = d.Dial
		}
		hooks[h] = wh
	}
	return hooks, nil
}

// Follow does what Metacontroller does when its CompositeController
// changes, until ctx ends: Metacontroller rebuilds the controller, and
// reads the Secrets its webhooks name, only when the spec differs from the
// one it runs (apiequality.Semantic.DeepEqual of the specs in
// pkg/controller/composite/metacontroller.go); a change of metadata alone,
// such as an annotation, changes nothing. Otherwise it keeps the token and
// CA bundle it read, whatever the Secrets hold now. A rebuild that cannot
// resolve a webhook leaves no controller (the old one is stopped first)
// and is retried.
func (d *Driver) Follow(ctx context.Context, every time.Duration) {
	r, err := d.kube.ByKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		return
	}
	name := Str(d.Controller(), "metadata", "name")
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cc, err := d.kube.Get(ctx, r, "", name)
		if err != nil {
			continue
		}
		d.Mu.RLock()
		same := d.stopped == nil && reflect.DeepEqual(cc["spec"], d.cc["spec"])
		d.Mu.RUnlock()
		if same {
			continue
		}
		hooks, err := d.resolveHooks(ctx, cc)
		d.Mu.Lock()
		d.cc, d.Hooks, d.stopped = cc, hooks, err
		d.Mu.Unlock()
	}
}

// Controller is the CompositeController the driver runs.
func (d *Driver) Controller() Obj {
	d.Mu.RLock()
	defer d.Mu.RUnlock()
	return d.cc
}

// Finalizer is the finalizer Metacontroller puts on the parents.
func (d *Driver) Finalizer() string {
	return "metacontroller.io/compositecontroller-" + Str(d.Controller(), "metadata", "name")
}

// Post calls hook with req and decodes the answer into resp.
func (d *Driver) Post(ctx context.Context, hook string, req Obj, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	d.Mu.RLock()
	wh, stopped := d.Hooks[hook], d.stopped
	d.Mu.RUnlock()
	if stopped != nil {
		return fmt.Errorf("%s hook: no controller: %w", hook, stopped)
	}
	hreq, err := http.NewRequestWithContext(ctx, "POST", wh.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if wh.Authorization != "" {
		hreq.Header.Set("Authorization", wh.Authorization)
	}
	// The etag cache's key: the request's root object, the parent.
	parent, _ := req["parent"].(Obj)
	key := Str(parent, "kind") + "/" + Str(parent, "metadata", "namespace") + "/" + Str(parent, "metadata", "name")
	var cached etagEntry
	if wh.etag {
		wh.mu.Lock()
		cached = wh.cached[key]
		wh.mu.Unlock()
		if cached.etag != "" {
			hreq.Header.Set("If-None-Match", cached.etag)
		}
	}
	start := time.Now()
	hresp, err := wh.Client.Do(hreq)
	if err != nil {
		return fmt.Errorf("%s hook: %w", hook, err)
	}
	defer hresp.Body.Close()
	data, _ := io.ReadAll(hresp.Body)
	wh.mu.Lock()
	wh.stats.Calls++
	wh.stats.BytesIn += len(data)
	wh.stats.Time += time.Since(start)
	wh.mu.Unlock()
	switch {
	case hresp.StatusCode == http.StatusNotModified && cached.etag != "":
		data = cached.body
		wh.mu.Lock()
		wh.stats.NotModified++
		wh.stats.BytesSaved += len(data)
		wh.mu.Unlock()
	case hresp.StatusCode != 200:
		return fmt.Errorf("%s hook: HTTP %d: %s", hook, hresp.StatusCode, FirstLine(data))
	case wh.etag && hresp.Header.Get("ETag") != "":
		wh.mu.Lock()
		wh.cached[key] = etagEntry{etag: hresp.Header.Get("ETag"), body: data}
		wh.mu.Unlock()
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("%s hook: undecodable answer: %w: %s", hook, err, FirstLine(data))
	}
	return nil
}

// Pass is what one reconcile did.
type Pass struct {
	Hook          string
	Response      HookResponse
	StatusWritten bool
	Applied       []string // "Kind/name"
	Deleted       []string
	Gone          bool // parent no longer exists
}

// Reconcile runs one Metacontroller sync of the parent.
func (d *Driver) Reconcile(ctx context.Context, ns, name string) (*Pass, error) {
	p := &Pass{}
	parent, err := d.Read.Get(ctx, d.Parent, ns, name)
	if IsStatus(err, 404) {
		p.Gone = true
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	parent["apiVersion"], parent["kind"] = d.Parent.APIVersion, d.Parent.Kind
	deleting := Field(parent, "metadata", "deletionTimestamp") != nil
	if !deleting && !HasFinalizer(parent, d.Finalizer()) {
		// Metacontroller adds its finalizer before doing anything else.
		if parent, err = d.setFinalizers(ctx, parent, append(Finalizers(parent), d.Finalizer())); err != nil {
			return nil, err
		}
	}
	if deleting && !HasFinalizer(parent, d.Finalizer()) {
		return p, nil
	}
	uid := Str(parent, "metadata", "uid")

	observed, err := d.ClaimChildren(ctx, parent)
	if err != nil {
		return nil, err
	}
	related, err := d.related(ctx, parent)
	if err != nil {
		return nil, err
	}
	req := Obj{"controller": d.Controller(), "parent": parent, "children": observed, "related": related}
	p.Hook = "sync"
	if deleting {
		p.Hook = "finalize"
		req["finalizing"] = true
	}
	if err := d.Post(ctx, p.Hook, req, &p.Response); err != nil {
		return nil, err
	}
	if d.Answered != nil {
		d.Answered(p.Hook, req, &p.Response)
	}
	if p.Response.Children == nil {
		return nil, fmt.Errorf("%s hook: children is null (an absent list would delete every child)", p.Hook)
	}

	if p.Response.Finalized {
		if parent, err = d.setFinalizers(ctx, parent, without(Finalizers(parent), d.Finalizer())); err != nil {
			if IsStatus(err, 404) {
				p.Gone = true
				return p, nil
			}
			return nil, err
		}
	}

	// Desired children: labelled to match the generated selector.
	desired := map[string]map[string]Obj{}
	for _, c := range p.Response.Children {
		for _, f := range []string{"apiVersion", "kind"} {
			if Str(c, f) == "" {
				return nil, fmt.Errorf("desired child without %s: %v", f, c)
			}
		}
		if Str(c, "metadata", "name") == "" {
			return nil, fmt.Errorf("desired %s without metadata.name", Str(c, "kind"))
		}
		if cns := Str(c, "metadata", "namespace"); cns != "" && cns != ns {
			return nil, fmt.Errorf("desired %s/%s in namespace %q, parent in %q", Str(c, "kind"), Str(c, "metadata", "name"), cns, ns)
		}
		meta := MapAt(c, "metadata")
		meta["namespace"] = ns
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = Obj{}
			meta["labels"] = labels
		}
		if _, ok := labels[controllerUIDLabel]; !ok {
			labels[controllerUIDLabel] = uid
		}
		key := Str(c, "kind") + "." + Str(c, "apiVersion")
		if desired[key] == nil {
			desired[key] = map[string]Obj{}
		}
		if _, dup := desired[key][Str(c, "metadata", "name")]; dup {
			return nil, fmt.Errorf("desired children list %s %s twice", key, Str(c, "metadata", "name"))
		}
		desired[key][Str(c, "metadata", "name")] = c
	}

	// As Metacontroller's finalizer manager has it (ShouldFinalize): once
	// the finalizer is removed, the children are no longer managed, whatever
	// the answer lists; garbage collection removes them through their owner
	// references once the parent is gone.
	manage := !deleting || HasFinalizer(parent, d.Finalizer())

	// Delete observed children that are not desired.
	for key, group := range observed {
		if !manage {
			break
		}
		for _, o := range group.(map[string]any) {
			n := Str(o.(Obj), "metadata", "name")
			if _, keep := desired[key][n]; keep {
				continue
			}
			if Field(o.(Obj), "metadata", "deletionTimestamp") != nil {
				continue
			}
			r, err := d.kube.ByKind(ctx, Str(o.(Obj), "apiVersion"), Str(o.(Obj), "kind"))
			if err != nil {
				return nil, err
			}
			if err := d.kube.Delete(ctx, r, ns, n); err != nil {
				return nil, fmt.Errorf("delete %s %s: %w", key, n, err)
			}
			p.Deleted = append(p.Deleted, Str(o.(Obj), "kind")+"/"+n)
		}
	}

	// Create or update the desired ones. Metacontroller's dynamic apply
	// records what it applied in an annotation; the hook relies on it when
	// an actor's spec turns invalid.
	if manage {
		keys := make([]string, 0, len(desired))
		for k := range desired {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, key := range keys {
			names := make([]string, 0, len(desired[key]))
			for n := range desired[key] {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				c := desired[key][n]
				group, _ := observed[key].(Obj)
				seen, _ := group[d.key(c)].(Obj)
				if err := d.ApplyChild(ctx, parent, c, seen, d.SkipUnchanged || deleting); err != nil {
					if errors.Is(err, ErrUnchanged) || errors.Is(err, ErrConflict) {
						continue
					}
					if errors.Is(err, errAlreadyExists) {
						// Metacontroller swallows AlreadyExists: an object of
						// that name that it did not claim stays as it is.
						continue
					}
					return nil, fmt.Errorf("apply %s %s: %w", key, n, err)
				}
				p.Applied = append(p.Applied, Str(c, "kind")+"/"+n)
			}
		}
	}

	// Status: replaced whole, observedGeneration added, written only when it
	// changes.
	if !p.Gone {
		status := Obj{}
		for k, v := range p.Response.Status {
			status[k] = v
		}
		status["observedGeneration"] = Field(parent, "metadata", "generation")
		if !JSONEqual(parent["status"], status) {
			upd := Obj{}
			for k, v := range parent {
				upd[k] = v
			}
			upd["status"] = status
			_, err := d.kube.Do(ctx, "PUT", d.Parent.Path(ns, name)+"/status", upd, "")
			switch {
			case IsStatus(err, 404):
				p.Gone = true
			case IsStatus(err, 409):
				// Changed under us; the next pass reads it again.
			case err != nil:
				return nil, fmt.Errorf("write status: %w", err)
			default:
				p.StatusWritten = true
			}
		}
	}
	return p, nil
}

// errAlreadyExists: a child to create exists already, unclaimed.
var errAlreadyExists = errors.New("already exists")

// ErrUnchanged: applying the child would change nothing (SkipUnchanged).
var ErrUnchanged = errors.New("unchanged")

// ErrConflict: the child changed since it was read (KEDA adds finalizers
// and writes status); the next pass applies it again.
var ErrConflict = errors.New("conflict")

// ApplyChild updates an observed child in place, or creates one that was
// not observed (observed nil), with the driver's apply strategy. Creating
// fails with errAlreadyExists when an object of that name exists, as
// Metacontroller's create does. With SkipUnchanged, an update that would
// change nothing is not sent (ErrUnchanged): always so in finalize, where
// an answer that keeps the children as last applied must leave them alone,
// as Metacontroller does. An update that loses a race with another writer
// (ErrConflict) is left to the next pass, as Metacontroller retries.
func (d *Driver) ApplyChild(ctx context.Context, parent, c, observed Obj, skipUnchanged bool) error {
	out := DeepCopy(c)
	meta := MapAt(out, "metadata")
	meta["ownerReferences"] = []any{ControllerRef(parent)}
	if d.Strategy == ServerSideApply {
		return d.serverSideApply(ctx, out, observed, skipUnchanged)
	}
	last, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = Obj{}
		meta["annotations"] = ann
	}
	ann[lastAppliedAnnotation] = string(last)
	if observed == nil {
		_, err := d.kube.Create(ctx, out, false)
		if IsStatus(err, 409) {
			return errAlreadyExists
		}
		return err
	}
	var lastApplied Obj
	if raw := Str(observed, "metadata", "annotations", lastAppliedAnnotation); raw != "" {
		if err := json.Unmarshal([]byte(raw), &lastApplied); err != nil {
			return fmt.Errorf("%s annotation: %w", lastAppliedAnnotation, err)
		}
	}
	merged := dynamicapply.Merge(observed, lastApplied, out)
	if skipUnchanged && reflect.DeepEqual(merged, observed) {
		return ErrUnchanged
	}
	r, err := d.kube.ByKind(ctx, Str(out, "apiVersion"), Str(out, "kind"))
	if err != nil {
		return err
	}
	_, err = d.kube.Do(ctx, "PUT", r.Path(Str(out, "metadata", "namespace"), Str(out, "metadata", "name")), merged, "")
	if IsStatus(err, 409) {
		return ErrConflict
	}
	return err
}

// ServerSideApply applies out as Metacontroller's server-side apply
// strategy does: one field manager, conflicts forced, no annotation.
func (d *Driver) serverSideApply(ctx context.Context, out, observed Obj, skipUnchanged bool) error {
	if observed != nil && skipUnchanged && Subset(out, observed) {
		return ErrUnchanged
	}
	if observed == nil {
		r, err := d.kube.ByKind(ctx, Str(out, "apiVersion"), Str(out, "kind"))
		if err != nil {
			return err
		}
		_, err = d.Read.Get(ctx, r, Str(out, "metadata", "namespace"), Str(out, "metadata", "name"))
		if err == nil {
			return errAlreadyExists
		}
		if !IsStatus(err, 404) {
			return err
		}
	}
	_, err := d.kube.Apply(ctx, out, fieldManager)
	return err
}

// ClaimChildren lists, for every child resource, the objects in the
// parent's namespace and claims them as Metacontroller's ControllerRef
// manager does with generateSelector (selector controller-uid=<uid>):
//   - controlled by the parent and labelled: claimed;
//   - controlled by the parent, not labelled: released (the parent's
//     ownerReference removed), unless the parent is being deleted;
//   - not controlled by anyone, labelled: adopted (a controller reference to
//     the parent added), unless the parent or the object is being deleted;
//   - controlled by another owner: ignored.
//
// Every group is present, even empty.
func (d *Driver) ClaimChildren(ctx context.Context, parent Obj) (Obj, error) {
	ns, uid := Str(parent, "metadata", "namespace"), Str(parent, "metadata", "uid")
	parentDeleting := Field(parent, "metadata", "deletionTimestamp") != nil
	out := Obj{}
	for _, r := range d.Kids {
		items, err := d.Read.List(ctx, r, ns, "")
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", r.Resource, err)
		}
		group := Obj{}
		for _, it := range items {
			labelled := Str(it, "metadata", "labels", controllerUIDLabel) == uid
			switch owner := ControllerUID(it); {
			case owner == uid && labelled:
			case owner == uid && !parentDeleting:
				if err := d.setOwners(ctx, r, it, withoutOwner(it, uid)); err != nil {
					return nil, fmt.Errorf("release %s %s: %w", r.Resource, Str(it, "metadata", "name"), err)
				}
				continue
			case owner == "" && labelled && !parentDeleting && Field(it, "metadata", "deletionTimestamp") == nil:
				refs, _ := Field(it, "metadata", "ownerReferences").([]any)
				refs = append(append([]any{}, refs...), ControllerRef(parent))
				if err := d.setOwners(ctx, r, it, refs); err != nil {
					return nil, fmt.Errorf("adopt %s %s: %w", r.Resource, Str(it, "metadata", "name"), err)
				}
			default:
				continue
			}
			group[d.key(it)] = it
		}
		out[r.Kind+"."+r.APIVersion] = group
	}
	return out, nil
}

// ControllerRef is an ownerReference to parent as its controller.
func ControllerRef(parent Obj) Obj {
	return Obj{
		"apiVersion":         parent["apiVersion"],
		"kind":               parent["kind"],
		"name":               Str(parent, "metadata", "name"),
		"uid":                Str(parent, "metadata", "uid"),
		"controller":         true,
		"blockOwnerDeletion": true,
	}
}

func withoutOwner(o Obj, uid string) []any {
	refs, _ := Field(o, "metadata", "ownerReferences").([]any)
	out := []any{}
	for _, r := range refs {
		if Str(r.(Obj), "uid") != uid {
			out = append(out, r)
		}
	}
	return out
}

// setOwners writes metadata.ownerReferences with an optimistic lock, as
// Metacontroller's atomic update does.
func (d *Driver) setOwners(ctx context.Context, r GVR, o Obj, refs []any) error {
	patch := Obj{"metadata": Obj{"ownerReferences": refs, "resourceVersion": Str(o, "metadata", "resourceVersion")}}
	_, err := d.kube.Do(ctx, "PATCH", r.Path(Str(o, "metadata", "namespace"), Str(o, "metadata", "name")), patch, "application/merge-patch+json")
	return err
}

// ControllerUID is the UID of o's controller, "" without one.
func ControllerUID(o Obj) string {
	refs, _ := Field(o, "metadata", "ownerReferences").([]any)
	for _, r := range refs {
		ref := r.(Obj)
		if c, _ := ref["controller"].(bool); c {
			return Str(ref, "uid")
		}
	}
	return ""
}

// key is how Metacontroller keys an observed or related object in a sync or
// finalize request: namespace/name with hook version v2, the bare name with
// v1 (where objects of one name in two namespaces overwrite each other).
func (d *Driver) key(o Obj) string {
	if Str(d.Controller(), "spec", "hooks", "sync", "version") == "v2" {
		return Str(o, "metadata", "namespace") + "/" + Str(o, "metadata", "name")
	}
	return Str(o, "metadata", "name")
}

// Contains reports whether list holds s.
func Contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// related runs the customize hook and fetches what it asks for.
func (d *Driver) related(ctx context.Context, parent Obj) (Obj, error) {
	var cr struct {
		RelatedResources []relatedRule `json:"relatedResources"`
	}
	uid, gen := Str(parent, "metadata", "uid"), Field(parent, "metadata", "generation")
	cached, hit := CustomizeEntry{}, false
	if c := d.CustomizeCache; c != nil {
		c.mu.Lock()
		cached, hit = c.Answers[uid]
		c.mu.Unlock()
		hit = hit && reflect.DeepEqual(cached.generation, gen)
	}
	if hit {
		cr.RelatedResources = cached.rules
	} else {
		if err := d.Post(ctx, "customize", Obj{"controller": d.Controller(), "parent": parent}, &cr); err != nil {
			return nil, err
		}
		if c := d.CustomizeCache; c != nil {
			c.mu.Lock()
			c.Answers[uid] = CustomizeEntry{generation: gen, rules: cr.RelatedResources}
			c.mu.Unlock()
		}
	}
	out := Obj{}
	for _, rule := range cr.RelatedResources {
		r, err := d.kube.byResource(ctx, rule.APIVersion, rule.Resource)
		if err != nil {
			return nil, fmt.Errorf("customize asked for %s %s: %w", rule.APIVersion, rule.Resource, err)
		}
		key := r.Kind + "." + r.APIVersion
		group, _ := out[key].(Obj)
		if group == nil {
			group = Obj{}
			out[key] = group
		}
		ns := rule.Namespace
		switch {
		case len(rule.Names) > 0 && ns == "":
			// As Metacontroller: a names rule without a namespace lists
			// every namespace, then keeps the names asked for.
			items, err := d.Read.List(ctx, r, "", "")
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				if Contains(rule.Names, Str(it, "metadata", "name")) {
					group[d.key(it)] = it
				}
			}
		case len(rule.Names) > 0:
			for _, n := range rule.Names {
				o, err := d.Read.Get(ctx, r, ns, n)
				if IsStatus(err, 404) {
					continue
				}
				if err != nil {
					return nil, err
				}
				o["apiVersion"], o["kind"] = r.APIVersion, r.Kind
				group[d.key(o)] = o
			}
		default:
			sel := ""
			if rule.LabelSelector != nil {
				var parts []string
				for k, v := range rule.LabelSelector.MatchLabels {
					parts = append(parts, k+"="+v)
				}
				sort.Strings(parts)
				sel = strings.Join(parts, ",")
			}
			// A label selector of a namespaced parent looks in its namespace.
			items, err := d.Read.List(ctx, r, Str(parent, "metadata", "namespace"), sel)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				group[d.key(it)] = it
			}
		}
	}
	return out, nil
}

// Converge reconciles until a pass writes no status and applies nothing
// new, at most max passes. It returns the passes run.
func (d *Driver) Converge(ctx context.Context, ns, name string, max int) ([]*Pass, error) {
	var passes []*Pass
	var prevStatus, before Obj
	for i := 0; i < max; i++ {
		p, err := d.Reconcile(ctx, ns, name)
		if err != nil {
			return passes, fmt.Errorf("pass %d: %w", i+1, err)
		}
		passes = append(passes, p)
		if p.Gone {
			return passes, nil
		}
		if !p.StatusWritten && len(p.Deleted) == 0 && i > 0 && JSONEqual(prevStatus, p.Response.Status) {
			return passes, nil
		}
		before, prevStatus = prevStatus, p.Response.Status
	}
	return passes, fmt.Errorf("%s/%s: status is not a fixpoint, still changing after %d passes with nothing else changing:\n%s",
		ns, name, max, statusDiff(before, prevStatus))
}

// statusDiff lists the status fields (conditions by type) that differ.
func statusDiff(a, b Obj) string {
	flat := func(s Obj) map[string]string {
		out := map[string]string{}
		for k, v := range s {
			if k != "conditions" {
				out[k] = MustJSON(v)
				continue
			}
			list, _ := v.([]any)
			for _, c := range list {
				for ck, cv := range c.(Obj) {
					out["conditions["+Str(c.(Obj), "type")+"]."+ck] = MustJSON(cv)
				}
			}
		}
		return out
	}
	fa, fb := flat(a), flat(b)
	var lines []string
	for k := range fa {
		if fa[k] != fb[k] {
			lines = append(lines, fmt.Sprintf("  %s:\n    was %s\n    now %s", k, fa[k], fb[k]))
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			lines = append(lines, fmt.Sprintf("  %s:\n    was absent\n    now %s", k, fb[k]))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Finalizers are o's finalizers.
func Finalizers(o Obj) []string {
	list, _ := Field(o, "metadata", "finalizers").([]any)
	var out []string
	for _, f := range list {
		out = append(out, f.(string))
	}
	return out
}

// HasFinalizer reports whether o has the finalizer f.
func HasFinalizer(o Obj, f string) bool {
	for _, x := range Finalizers(o) {
		if x == f {
			return true
		}
	}
	return false
}

func without(list []string, f string) []string {
	var out []string
	for _, x := range list {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}

// setFinalizers writes metadata.finalizers with an optimistic lock.
func (d *Driver) setFinalizers(ctx context.Context, parent Obj, fs []string) (Obj, error) {
	if fs == nil {
		fs = []string{}
	}
	patch := Obj{"metadata": Obj{"finalizers": fs, "resourceVersion": Str(parent, "metadata", "resourceVersion")}}
	out, err := d.kube.Do(ctx, "PATCH", d.Parent.Path(Str(parent, "metadata", "namespace"), Str(parent, "metadata", "name")), patch, "application/merge-patch+json")
	if err != nil {
		return nil, fmt.Errorf("set finalizers: %w", err)
	}
	out["apiVersion"], out["kind"] = d.Parent.APIVersion, d.Parent.Kind
	return out, nil
}

// JSONEqual reports whether a and b encode to the same JSON.
func JSONEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}

// Subset reports whether every field of want is in have with the same
// value; lists must have the same length and match element by element.
func Subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			hv, ok := h[k]
			if !ok && v != nil {
				return false
			}
			if ok && !Subset(v, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !Subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, have)
	}
}

// DeepCopy is a copy of o through JSON.
func DeepCopy(o Obj) Obj {
	data, _ := json.Marshal(o)
	var out Obj
	_ = json.Unmarshal(data, &out)
	return out
}

// MustJSON is v as JSON, for messages.
func MustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
