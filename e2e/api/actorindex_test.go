//go:build e2e

package api

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/internal/actorindex"
	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestActorIndexAnswersAsTheAPIServer: the claimant index, fed by one
// watch of the real API server, answers each claimant list as the API
// server's field selector does (namesakes by metadata.name in every
// namespace, twins by spec.actor in a namespace), without a list, and
// sees an actor's deletion. An index whose watch has not listed lists
// through its fallback.
func TestActorIndexAnswersAsTheAPIServer(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	rc, err := clientcmd.BuildConfigFromFlags("", env.Cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamic.NewForConfigOrDie(rc)
	api := apiLister{client}

	a, b := "e2e-index-a", "e2e-index-b"
	for _, ns := range []string{a, b} {
		testenv.EnsureNamespace(t, ctx, ns, false)
	}
	nested := filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml")
	flat := filepath.Join(env.Root, "e2e", "testdata", "actors", "flat-1x.yaml")
	for _, c := range []struct{ path, ns, name, actor string }{
		{nested, a, "index-shared", ""},
		{nested, b, "index-shared", ""},
		{nested, b, "index-other", ""},
		{flat, a, "index-twin-1", "index-twin"},
		{flat, a, "index-twin-2", "index-twin"},
		{flat, b, "index-twin-3", "index-twin"},
	} {
		obj := testenv.LoadActor(t, c.path, c.ns)
		testenv.MapAt(obj, "metadata")["name"] = c.name
		if c.actor != "" {
			testenv.MapAt(obj, "spec")["actor"] = c.actor
		}
		createBare(t, ctx, obj)
	}

	fallback := &countingLister{next: api}
	watch, err := actorindex.Client(rc)
	if err != nil {
		t.Fatal(err)
	}
	index := actorindex.New(watch, fallback)
	go index.Run(ctx)
	testenv.Eventually(t, time.Minute, "the index to list every actor", index.Ready)

	lists := []struct {
		namespace, selector string
		want                int
	}{
		{"", "metadata.name=index-shared", 2},
		{a, "spec.actor=index-twin", 2},
		{b, "spec.actor=index-twin", 1},
		{"", "metadata.name=index-none", 0},
	}
	for _, l := range lists {
		want, err := api.ListActors(ctx, l.namespace, l.selector)
		if err != nil {
			t.Fatal(err)
		}
		got, err := index.ListActors(ctx, l.namespace, l.selector)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != l.want {
			t.Errorf("the API server lists %d actors of %s in %q; the test expects %d", len(want), l.selector, l.namespace, l.want)
		}
		if diff := cmp.Diff(want.List(), got.List()); diff != "" {
			t.Errorf("%s in %q: index against the API server (-api +index):\n%s", l.selector, l.namespace, diff)
		}
	}
	if n := fallback.calls.Load(); n != 0 {
		t.Errorf("a ready index listed through its fallback %d times", n)
	}

	if err := env.Cluster.Client.Delete(ctx, testenv.ActorGVR(), a, "index-shared"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the index to drop the deleted actor", func() bool {
		got, err := index.ListActors(ctx, "", "metadata.name=index-shared")
		_, kept := got[a+"/index-shared"]
		return err == nil && len(got) == 1 && !kept
	})

	unreachable, err := actorindex.Client(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	cold := &countingLister{next: api}
	if _, err := actorindex.New(unreachable, cold).ListActors(ctx, "", "metadata.name=index-shared"); err != nil {
		t.Fatal(err)
	}
	if cold.calls.Load() != 1 {
		t.Errorf("an index that has not listed answered without its fallback")
	}
}

var actorsResource = v1alpha1.GroupVersion.WithResource(v1alpha1.Resource)

// createBare creates the actor with no hook to sync it: the index reads
// actors, not their children. The cleanup deletes it if it is still there.
func createBare(t *testing.T, ctx context.Context, obj testenv.Obj) {
	t.Helper()
	k, ns, name := env.Cluster.Client, testenv.Str(obj, "metadata", "namespace"), testenv.Str(obj, "metadata", "name")
	if _, err := k.Create(ctx, obj, false); err != nil {
		t.Fatalf("create %s/%s: %v", ns, name, err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), testenv.ActorGVR(), ns, name) })
}

// apiLister lists actors from the API server by field selector, as the
// service's kubeReader does.
type apiLister struct{ client dynamic.Interface }

func (l apiLister) ListActors(ctx context.Context, namespace, selector string) (hook.ActorGroup, error) {
	list, err := l.client.Resource(actorsResource).Namespace(namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return hook.DecodeActorList(data)
}

type countingLister struct {
	next  actorindex.Lister
	calls atomic.Int32
}

func (c *countingLister) ListActors(ctx context.Context, namespace, selector string) (hook.ActorGroup, error) {
	c.calls.Add(1)
	return c.next.ListActors(ctx, namespace, selector)
}
