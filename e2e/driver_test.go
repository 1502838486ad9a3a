//go:build e2e

package e2e

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
// children with either of Metacontroller's apply strategies (applyStrategy).

const (
	lastAppliedAnnotation = "metacontroller.k8s.io/last-applied-configuration"
	controllerUIDLabel    = "controller-uid"
	fieldManager          = "metacontroller"
)

// applyStrategy is Metacontroller's --apply-strategy, as its documentation
// ("Apply Semantics") describes them:
//   - dynamicApply, the default: a child is created as given, with the
//     last-applied annotation; an observed one is updated with a three-way
//     merge of the observed object, that annotation and the desired object,
//     lists of objects merged as maps by their conventional key
//     (internal/dynamicapply), and the update is sent only when the merge
//     changes the observed object;
//   - serverSideApply: the desired object is sent as a server-side apply,
//     and no annotation is written.
type applyStrategy string

const (
	dynamicApply    applyStrategy = "dynamic-apply"
	serverSideApply applyStrategy = "server-side-apply"
)

// strategyFromEnv is the strategy ASYA_E2E_APPLY_STRATEGY names, by default
// dynamic apply.
func strategyFromEnv() (applyStrategy, error) {
	switch s := applyStrategy(os.Getenv("ASYA_E2E_APPLY_STRATEGY")); s {
	case "":
		return dynamicApply, nil
	case dynamicApply, serverSideApply:
		return s, nil
	default:
		return "", fmt.Errorf("ASYA_E2E_APPLY_STRATEGY=%q: want %s or %s", s, dynamicApply, serverSideApply)
	}
}

type driver struct {
	kube   *kube
	cc     obj // the CompositeController, as Metacontroller sends it
	parent gvr
	kids   []gvr // child resources, in the CompositeController's order
	hooks  map[string]*webhook
	// mu guards cc, hooks and stopped, which follow replaces when the
	// CompositeController's spec changes.
	mu *sync.RWMutex
	// stopped says why the webhooks could not be resolved after the last
	// change: Metacontroller then runs no controller and calls no hook.
	stopped error
	// dial, when set, connects every webhook, for hook URLs that name a
	// Service the test serves on loopback.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// read is where the driver reads objects: the API server itself, or a
	// cache that watches keep current, as Metacontroller's informers do.
	read     reader
	strategy applyStrategy

	// What Metacontroller also does, which tests that run one pass at a
	// time leave off:
	//   - customizeCache keeps the customize answer per parent UID and
	//     generation and calls the hook again only for a new generation;
	//   - skipUnchanged leaves a child alone when applying it would change
	//     nothing (every desired field is already there, with the same
	//     last-applied annotation), as Metacontroller skips the update when
	//     its three-way merge gives the observed object back. Finalize
	//     passes do so always.
	customizeCache *customizeCache
	skipUnchanged  bool
	// answered, when set, may change a sync or finalize answer before the
	// driver acts on it: a measurement's stand-in for a different hook.
	answered func(hook string, req obj, resp *hookResponse)
}

// reader reads objects as maps. The caller may change the top level of
// what it gets, and all of what get returns; below the top level, listed
// objects may be shared and are read only.
type reader interface {
	get(ctx context.Context, r gvr, ns, name string) (obj, error)
	list(ctx context.Context, r gvr, ns, labelSelector string) ([]obj, error)
}

type customizeCache struct {
	mu      sync.Mutex
	answers map[string]customizeEntry // by parent UID
}

type customizeEntry struct {
	generation any
	rules      []relatedRule
}

// hookResponse is a sync or finalize answer.
type hookResponse struct {
	Status             obj     `json:"status"`
	Children           []obj   `json:"children"`
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

func newDriver(ctx context.Context, k *kube, cc obj) (*driver, error) {
	strategy, err := strategyFromEnv()
	if err != nil {
		return nil, err
	}
	d := &driver{kube: k, read: k, cc: cc, strategy: strategy, mu: &sync.RWMutex{}}
	if d.hooks, err = d.resolveHooks(ctx, cc); err != nil {
		return nil, err
	}
	pr := mapAt(cc, "spec", "parentResource")
	if d.parent, err = k.byResource(ctx, str(pr, "apiVersion"), str(pr, "resource")); err != nil {
		return nil, err
	}
	list, _ := field(cc, "spec", "childResources").([]any)
	for _, c := range list {
		cr := c.(obj)
		r, err := k.byResource(ctx, str(cr, "apiVersion"), str(cr, "resource"))
		if err != nil {
			return nil, fmt.Errorf("child resource: %w", err)
		}
		if m := str(cr, "updateStrategy", "method"); m != "InPlace" {
			return nil, fmt.Errorf("child resource %s: the driver implements InPlace only, got %q", r.Resource, m)
		}
		d.kids = append(d.kids, r)
	}
	return d, nil
}

// resolveHooks reads the connection of every webhook of cc, the Secrets it
// names included, as Metacontroller does when it builds a controller.
func (d *driver) resolveHooks(ctx context.Context, cc obj) (map[string]*webhook, error) {
	hooks := map[string]*webhook{}
	for _, h := range []string{"customize", "sync", "finalize"} {
		wh, err := newWebhook(ctx, d.kube, mapAt(cc, "spec", "hooks", h, "webhook"))
		if err != nil {
			return nil, fmt.Errorf("%s hook: %w", h, err)
		}
		if d.dial != nil {
			wh.client.Transport.(*http.Transport).DialContext = d.dial
		}
		hooks[h] = wh
	}
	return hooks, nil
}

// follow does what Metacontroller does when its CompositeController
// changes, until ctx ends: Metacontroller rebuilds the controller, and
// reads the Secrets its webhooks name, only when the spec differs from the
// one it runs (apiequality.Semantic.DeepEqual of the specs in
// pkg/controller/composite/metacontroller.go); a change of metadata alone,
// such as an annotation, changes nothing. Otherwise it keeps the token and
// CA bundle it read, whatever the Secrets hold now. A rebuild that cannot
// resolve a webhook leaves no controller (the old one is stopped first)
// and is retried.
func (d *driver) follow(ctx context.Context, every time.Duration) {
	r, err := d.kube.byKind(ctx, "metacontroller.k8s.io/v1alpha1", "CompositeController")
	if err != nil {
		return
	}
	name := str(d.controller(), "metadata", "name")
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cc, err := d.kube.get(ctx, r, "", name)
		if err != nil {
			continue
		}
		d.mu.RLock()
		same := d.stopped == nil && reflect.DeepEqual(cc["spec"], d.cc["spec"])
		d.mu.RUnlock()
		if same {
			continue
		}
		hooks, err := d.resolveHooks(ctx, cc)
		d.mu.Lock()
		d.cc, d.hooks, d.stopped = cc, hooks, err
		d.mu.Unlock()
	}
}

// controller is the CompositeController the driver runs.
func (d *driver) controller() obj {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.cc
}

func (d *driver) finalizer() string {
	return "metacontroller.io/compositecontroller-" + str(d.controller(), "metadata", "name")
}

func (d *driver) post(ctx context.Context, hook string, req obj, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	d.mu.RLock()
	wh, stopped := d.hooks[hook], d.stopped
	d.mu.RUnlock()
	if stopped != nil {
		return fmt.Errorf("%s hook: no controller: %w", hook, stopped)
	}
	hreq, err := http.NewRequestWithContext(ctx, "POST", wh.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if wh.authorization != "" {
		hreq.Header.Set("Authorization", wh.authorization)
	}
	// The etag cache's key: the request's root object, the parent.
	parent, _ := req["parent"].(obj)
	key := str(parent, "kind") + "/" + str(parent, "metadata", "namespace") + "/" + str(parent, "metadata", "name")
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
	hresp, err := wh.client.Do(hreq)
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
		return fmt.Errorf("%s hook: HTTP %d: %s", hook, hresp.StatusCode, firstLine(data))
	case wh.etag && hresp.Header.Get("ETag") != "":
		wh.mu.Lock()
		wh.cached[key] = etagEntry{etag: hresp.Header.Get("ETag"), body: data}
		wh.mu.Unlock()
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("%s hook: undecodable answer: %w: %s", hook, err, firstLine(data))
	}
	return nil
}

// pass is what one reconcile did.
type pass struct {
	Hook          string
	Response      hookResponse
	StatusWritten bool
	Applied       []string // "Kind/name"
	Deleted       []string
	Gone          bool // parent no longer exists
}

// reconcile runs one Metacontroller sync of the parent.
func (d *driver) reconcile(ctx context.Context, ns, name string) (*pass, error) {
	p := &pass{}
	parent, err := d.read.get(ctx, d.parent, ns, name)
	if isStatus(err, 404) {
		p.Gone = true
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	parent["apiVersion"], parent["kind"] = d.parent.APIVersion, d.parent.Kind
	deleting := field(parent, "metadata", "deletionTimestamp") != nil
	if !deleting && !hasFinalizer(parent, d.finalizer()) {
		// Metacontroller adds its finalizer before doing anything else.
		if parent, err = d.setFinalizers(ctx, parent, append(finalizers(parent), d.finalizer())); err != nil {
			return nil, err
		}
	}
	if deleting && !hasFinalizer(parent, d.finalizer()) {
		return p, nil
	}
	uid := str(parent, "metadata", "uid")

	observed, err := d.claimChildren(ctx, parent)
	if err != nil {
		return nil, err
	}
	related, err := d.related(ctx, parent)
	if err != nil {
		return nil, err
	}
	req := obj{"controller": d.controller(), "parent": parent, "children": observed, "related": related}
	p.Hook = "sync"
	if deleting {
		p.Hook = "finalize"
		req["finalizing"] = true
	}
	if err := d.post(ctx, p.Hook, req, &p.Response); err != nil {
		return nil, err
	}
	if d.answered != nil {
		d.answered(p.Hook, req, &p.Response)
	}
	if p.Response.Children == nil {
		return nil, fmt.Errorf("%s hook: children is null (an absent list would delete every child)", p.Hook)
	}

	if p.Response.Finalized {
		if parent, err = d.setFinalizers(ctx, parent, without(finalizers(parent), d.finalizer())); err != nil {
			if isStatus(err, 404) {
				p.Gone = true
				return p, nil
			}
			return nil, err
		}
	}

	// Desired children: labelled to match the generated selector.
	desired := map[string]map[string]obj{}
	for _, c := range p.Response.Children {
		for _, f := range []string{"apiVersion", "kind"} {
			if str(c, f) == "" {
				return nil, fmt.Errorf("desired child without %s: %v", f, c)
			}
		}
		if str(c, "metadata", "name") == "" {
			return nil, fmt.Errorf("desired %s without metadata.name", str(c, "kind"))
		}
		if cns := str(c, "metadata", "namespace"); cns != "" && cns != ns {
			return nil, fmt.Errorf("desired %s/%s in namespace %q, parent in %q", str(c, "kind"), str(c, "metadata", "name"), cns, ns)
		}
		meta := mapAt(c, "metadata")
		meta["namespace"] = ns
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = obj{}
			meta["labels"] = labels
		}
		if _, ok := labels[controllerUIDLabel]; !ok {
			labels[controllerUIDLabel] = uid
		}
		key := str(c, "kind") + "." + str(c, "apiVersion")
		if desired[key] == nil {
			desired[key] = map[string]obj{}
		}
		if _, dup := desired[key][str(c, "metadata", "name")]; dup {
			return nil, fmt.Errorf("desired children list %s %s twice", key, str(c, "metadata", "name"))
		}
		desired[key][str(c, "metadata", "name")] = c
	}

	// As Metacontroller's finalizer manager has it (ShouldFinalize): once
	// the finalizer is removed, the children are no longer managed, whatever
	// the answer lists; garbage collection removes them through their owner
	// references once the parent is gone.
	manage := !deleting || hasFinalizer(parent, d.finalizer())

	// Delete observed children that are not desired.
	for key, group := range observed {
		if !manage {
			break
		}
		for _, o := range group.(map[string]any) {
			n := str(o.(obj), "metadata", "name")
			if _, keep := desired[key][n]; keep {
				continue
			}
			if field(o.(obj), "metadata", "deletionTimestamp") != nil {
				continue
			}
			r, err := d.kube.byKind(ctx, str(o.(obj), "apiVersion"), str(o.(obj), "kind"))
			if err != nil {
				return nil, err
			}
			if err := d.kube.delete(ctx, r, ns, n); err != nil {
				return nil, fmt.Errorf("delete %s %s: %w", key, n, err)
			}
			p.Deleted = append(p.Deleted, str(o.(obj), "kind")+"/"+n)
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
				group, _ := observed[key].(obj)
				seen, _ := group[d.key(c)].(obj)
				if err := d.applyChild(ctx, parent, c, seen, d.skipUnchanged || deleting); err != nil {
					if errors.Is(err, errUnchanged) || errors.Is(err, errConflict) {
						continue
					}
					if errors.Is(err, errAlreadyExists) {
						// Metacontroller swallows AlreadyExists: an object of
						// that name that it did not claim stays as it is.
						continue
					}
					return nil, fmt.Errorf("apply %s %s: %w", key, n, err)
				}
				p.Applied = append(p.Applied, str(c, "kind")+"/"+n)
			}
		}
	}

	// Status: replaced whole, observedGeneration added, written only when it
	// changes.
	if !p.Gone {
		status := obj{}
		for k, v := range p.Response.Status {
			status[k] = v
		}
		status["observedGeneration"] = field(parent, "metadata", "generation")
		if !jsonEqual(parent["status"], status) {
			upd := obj{}
			for k, v := range parent {
				upd[k] = v
			}
			upd["status"] = status
			_, err := d.kube.do(ctx, "PUT", d.parent.path(ns, name)+"/status", upd, "")
			switch {
			case isStatus(err, 404):
				p.Gone = true
			case isStatus(err, 409):
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

// errUnchanged: applying the child would change nothing (skipUnchanged).
var errUnchanged = errors.New("unchanged")

// errConflict: the child changed since it was read (KEDA adds finalizers
// and writes status); the next pass applies it again.
var errConflict = errors.New("conflict")

// applyChild updates an observed child in place, or creates one that was
// not observed (observed nil), with the driver's apply strategy. Creating
// fails with errAlreadyExists when an object of that name exists, as
// Metacontroller's create does. With skipUnchanged, an update that would
// change nothing is not sent (errUnchanged): always so in finalize, where
// an answer that keeps the children as last applied must leave them alone,
// as Metacontroller does. An update that loses a race with another writer
// (errConflict) is left to the next pass, as Metacontroller retries.
func (d *driver) applyChild(ctx context.Context, parent, c, observed obj, skipUnchanged bool) error {
	out := deepCopy(c)
	meta := mapAt(out, "metadata")
	meta["ownerReferences"] = []any{controllerRef(parent)}
	if d.strategy == serverSideApply {
		return d.serverSideApply(ctx, out, observed, skipUnchanged)
	}
	last, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = obj{}
		meta["annotations"] = ann
	}
	ann[lastAppliedAnnotation] = string(last)
	if observed == nil {
		_, err := d.kube.create(ctx, out, false)
		if isStatus(err, 409) {
			return errAlreadyExists
		}
		return err
	}
	var lastApplied obj
	if raw := str(observed, "metadata", "annotations", lastAppliedAnnotation); raw != "" {
		if err := json.Unmarshal([]byte(raw), &lastApplied); err != nil {
			return fmt.Errorf("%s annotation: %w", lastAppliedAnnotation, err)
		}
	}
	merged := dynamicapply.Merge(observed, lastApplied, out)
	if skipUnchanged && reflect.DeepEqual(merged, observed) {
		return errUnchanged
	}
	r, err := d.kube.byKind(ctx, str(out, "apiVersion"), str(out, "kind"))
	if err != nil {
		return err
	}
	_, err = d.kube.do(ctx, "PUT", r.path(str(out, "metadata", "namespace"), str(out, "metadata", "name")), merged, "")
	if isStatus(err, 409) {
		return errConflict
	}
	return err
}

// serverSideApply applies out as Metacontroller's server-side apply
// strategy does: one field manager, conflicts forced, no annotation.
func (d *driver) serverSideApply(ctx context.Context, out, observed obj, skipUnchanged bool) error {
	if observed != nil && skipUnchanged && subset(out, observed) {
		return errUnchanged
	}
	if observed == nil {
		r, err := d.kube.byKind(ctx, str(out, "apiVersion"), str(out, "kind"))
		if err != nil {
			return err
		}
		_, err = d.read.get(ctx, r, str(out, "metadata", "namespace"), str(out, "metadata", "name"))
		if err == nil {
			return errAlreadyExists
		}
		if !isStatus(err, 404) {
			return err
		}
	}
	_, err := d.kube.apply(ctx, out, fieldManager)
	return err
}

// claimChildren lists, for every child resource, the objects in the
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
func (d *driver) claimChildren(ctx context.Context, parent obj) (obj, error) {
	ns, uid := str(parent, "metadata", "namespace"), str(parent, "metadata", "uid")
	parentDeleting := field(parent, "metadata", "deletionTimestamp") != nil
	out := obj{}
	for _, r := range d.kids {
		items, err := d.read.list(ctx, r, ns, "")
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", r.Resource, err)
		}
		group := obj{}
		for _, it := range items {
			labelled := str(it, "metadata", "labels", controllerUIDLabel) == uid
			switch owner := controllerUID(it); {
			case owner == uid && labelled:
			case owner == uid && !parentDeleting:
				if err := d.setOwners(ctx, r, it, withoutOwner(it, uid)); err != nil {
					return nil, fmt.Errorf("release %s %s: %w", r.Resource, str(it, "metadata", "name"), err)
				}
				continue
			case owner == "" && labelled && !parentDeleting && field(it, "metadata", "deletionTimestamp") == nil:
				refs, _ := field(it, "metadata", "ownerReferences").([]any)
				refs = append(append([]any{}, refs...), controllerRef(parent))
				if err := d.setOwners(ctx, r, it, refs); err != nil {
					return nil, fmt.Errorf("adopt %s %s: %w", r.Resource, str(it, "metadata", "name"), err)
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

func controllerRef(parent obj) obj {
	return obj{
		"apiVersion":         parent["apiVersion"],
		"kind":               parent["kind"],
		"name":               str(parent, "metadata", "name"),
		"uid":                str(parent, "metadata", "uid"),
		"controller":         true,
		"blockOwnerDeletion": true,
	}
}

func withoutOwner(o obj, uid string) []any {
	refs, _ := field(o, "metadata", "ownerReferences").([]any)
	out := []any{}
	for _, r := range refs {
		if str(r.(obj), "uid") != uid {
			out = append(out, r)
		}
	}
	return out
}

// setOwners writes metadata.ownerReferences with an optimistic lock, as
// Metacontroller's atomic update does.
func (d *driver) setOwners(ctx context.Context, r gvr, o obj, refs []any) error {
	patch := obj{"metadata": obj{"ownerReferences": refs, "resourceVersion": str(o, "metadata", "resourceVersion")}}
	_, err := d.kube.do(ctx, "PATCH", r.path(str(o, "metadata", "namespace"), str(o, "metadata", "name")), patch, "application/merge-patch+json")
	return err
}

func controllerUID(o obj) string {
	refs, _ := field(o, "metadata", "ownerReferences").([]any)
	for _, r := range refs {
		ref := r.(obj)
		if c, _ := ref["controller"].(bool); c {
			return str(ref, "uid")
		}
	}
	return ""
}

// key is how Metacontroller keys an observed or related object in a sync or
// finalize request: namespace/name with hook version v2, the bare name with
// v1 (where objects of one name in two namespaces overwrite each other).
func (d *driver) key(o obj) string {
	if str(d.controller(), "spec", "hooks", "sync", "version") == "v2" {
		return str(o, "metadata", "namespace") + "/" + str(o, "metadata", "name")
	}
	return str(o, "metadata", "name")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// related runs the customize hook and fetches what it asks for.
func (d *driver) related(ctx context.Context, parent obj) (obj, error) {
	var cr struct {
		RelatedResources []relatedRule `json:"relatedResources"`
	}
	uid, gen := str(parent, "metadata", "uid"), field(parent, "metadata", "generation")
	cached, hit := customizeEntry{}, false
	if c := d.customizeCache; c != nil {
		c.mu.Lock()
		cached, hit = c.answers[uid]
		c.mu.Unlock()
		hit = hit && reflect.DeepEqual(cached.generation, gen)
	}
	if hit {
		cr.RelatedResources = cached.rules
	} else {
		if err := d.post(ctx, "customize", obj{"controller": d.controller(), "parent": parent}, &cr); err != nil {
			return nil, err
		}
		if c := d.customizeCache; c != nil {
			c.mu.Lock()
			c.answers[uid] = customizeEntry{generation: gen, rules: cr.RelatedResources}
			c.mu.Unlock()
		}
	}
	out := obj{}
	for _, rule := range cr.RelatedResources {
		r, err := d.kube.byResource(ctx, rule.APIVersion, rule.Resource)
		if err != nil {
			return nil, fmt.Errorf("customize asked for %s %s: %w", rule.APIVersion, rule.Resource, err)
		}
		key := r.Kind + "." + r.APIVersion
		group, _ := out[key].(obj)
		if group == nil {
			group = obj{}
			out[key] = group
		}
		ns := rule.Namespace
		switch {
		case len(rule.Names) > 0 && ns == "":
			// As Metacontroller: a names rule without a namespace lists
			// every namespace, then keeps the names asked for.
			items, err := d.read.list(ctx, r, "", "")
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				if contains(rule.Names, str(it, "metadata", "name")) {
					group[d.key(it)] = it
				}
			}
		case len(rule.Names) > 0:
			for _, n := range rule.Names {
				o, err := d.read.get(ctx, r, ns, n)
				if isStatus(err, 404) {
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
			items, err := d.read.list(ctx, r, str(parent, "metadata", "namespace"), sel)
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

// converge reconciles until a pass writes no status and applies nothing
// new, at most max passes. It returns the passes run.
func (d *driver) converge(ctx context.Context, ns, name string, max int) ([]*pass, error) {
	var passes []*pass
	var prevStatus, before obj
	for i := 0; i < max; i++ {
		p, err := d.reconcile(ctx, ns, name)
		if err != nil {
			return passes, fmt.Errorf("pass %d: %w", i+1, err)
		}
		passes = append(passes, p)
		if p.Gone {
			return passes, nil
		}
		if !p.StatusWritten && len(p.Deleted) == 0 && i > 0 && jsonEqual(prevStatus, p.Response.Status) {
			return passes, nil
		}
		before, prevStatus = prevStatus, p.Response.Status
	}
	return passes, fmt.Errorf("%s/%s: status is not a fixpoint, still changing after %d passes with nothing else changing:\n%s",
		ns, name, max, statusDiff(before, prevStatus))
}

// statusDiff lists the status fields (conditions by type) that differ.
func statusDiff(a, b obj) string {
	flat := func(s obj) map[string]string {
		out := map[string]string{}
		for k, v := range s {
			if k != "conditions" {
				out[k] = mustJSON(v)
				continue
			}
			list, _ := v.([]any)
			for _, c := range list {
				for ck, cv := range c.(obj) {
					out["conditions["+str(c.(obj), "type")+"]."+ck] = mustJSON(cv)
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

func finalizers(o obj) []string {
	list, _ := field(o, "metadata", "finalizers").([]any)
	var out []string
	for _, f := range list {
		out = append(out, f.(string))
	}
	return out
}

func hasFinalizer(o obj, f string) bool {
	for _, x := range finalizers(o) {
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
func (d *driver) setFinalizers(ctx context.Context, parent obj, fs []string) (obj, error) {
	if fs == nil {
		fs = []string{}
	}
	patch := obj{"metadata": obj{"finalizers": fs, "resourceVersion": str(parent, "metadata", "resourceVersion")}}
	out, err := d.kube.do(ctx, "PATCH", d.parent.path(str(parent, "metadata", "namespace"), str(parent, "metadata", "name")), patch, "application/merge-patch+json")
	if err != nil {
		return nil, fmt.Errorf("set finalizers: %w", err)
	}
	out["apiVersion"], out["kind"] = d.parent.APIVersion, d.parent.Kind
	return out, nil
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}

// subset reports whether every field of want is in have with the same
// value; lists must have the same length and match element by element.
func subset(want, have any) bool {
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
			if ok && !subset(v, hv) {
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
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, have)
	}
}

func deepCopy(o obj) obj {
	data, _ := json.Marshal(o)
	var out obj
	_ = json.Unmarshal(data, &out)
	return out
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
