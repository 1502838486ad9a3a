//go:build e2e

package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	amqp "github.com/rabbitmq/amqp091-go"
)

// CtxFor is a context that ends after d or with the test.
func CtxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ActorGVR is the AsyncActor resource.
func ActorGVR() GVR {
	return GVR{APIVersion: "asya.sh/v1alpha1", Resource: "asyncactors", Kind: "AsyncActor", Namespaced: true}
}

// EnsureNamespace creates ns and the Secrets the test transports name.
func EnsureNamespace(t *testing.T, ctx context.Context, ns string, secrets bool) {
	t.Helper()
	k := env.Cluster.Client
	if _, err := k.Apply(ctx, Obj{"apiVersion": "v1", "kind": "Namespace", "metadata": Obj{"name": ns}}, "e2e"); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	if !secrets {
		return
	}
	for _, s := range []Obj{
		{"apiVersion": "v1", "kind": "Secret", "metadata": Obj{"name": "rabbitmq-secret", "namespace": ns},
			"stringData": Obj{"password": "guest"}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": Obj{"name": "aws-creds", "namespace": ns},
			"stringData": Obj{"access-key-id": "e2e", "secret-access-key": "e2e"}},
	} {
		if _, err := k.Apply(ctx, s, "e2e"); err != nil {
			t.Fatalf("secret: %v", err)
		}
	}
}

// LoadActor reads an actor manifest and places it in ns.
func LoadActor(t *testing.T, path, ns string) Obj {
	t.Helper()
	docs, err := ReadYAMLDocs(path)
	var actors []Obj
	for _, d := range docs {
		if Str(d, "kind") == "AsyncActor" {
			actors = append(actors, d)
		}
	}
	if err != nil || len(actors) != 1 {
		t.Fatalf("%s: %v (%d AsyncActor documents, want 1)", path, err, len(actors))
	}
	a := actors[0]
	MapAt(a, "metadata")["namespace"] = ns
	return a
}

// Keys are m's keys, sorted.
func Keys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// GetActor reads the actor, failing the test when it cannot.
func GetActor(t *testing.T, ctx context.Context, ns, name string) Obj {
	t.Helper()
	a, err := env.Cluster.Client.Get(ctx, ActorGVR(), ns, name)
	if err != nil {
		t.Fatalf("get actor %s/%s: %v", ns, name, err)
	}
	return a
}

// example is an AsyncActor of examples/ and the file it is in.
type example struct {
	File  string
	Actor Obj
}

// Examples lists the AsyncActors of examples/, and fails the test when
// there are none: a test of the examples that finds none tests nothing.
func Examples(t *testing.T) []example {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.Root, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	for _, f := range files {
		docs, err := ReadYAMLDocs(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if Str(d, "kind") == "AsyncActor" {
				out = append(out, example{f, d})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no AsyncActor in %s", filepath.Join(env.Root, "examples"))
	}
	return out
}

// SQSClient is a client of the SQS emulator.
func SQSClient() *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(env.SQSURL),
		Credentials:  aws.AnonymousCredentials{},
	})
}

// FinalizeActor is deleteAndFinalize without a test: it returns the
// finalize passes, or an error if the actor is not finalized or its
// children are not collected.
func FinalizeActor(ctx context.Context, ns, name string) ([]*Pass, error) {
	k := env.Cluster.Client
	if err := k.Delete(ctx, ActorGVR(), ns, name); err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	a, err := k.Get(ctx, ActorGVR(), ns, name)
	if err != nil {
		return nil, fmt.Errorf("actor gone before finalize ran (finalizer missing?): %w", err)
	}
	if Field(a, "metadata", "deletionTimestamp") == nil || !HasFinalizer(a, env.Driver.Finalizer()) {
		return nil, fmt.Errorf("deleted actor has no deletionTimestamp or no finalizer: %s", MustJSON(a["metadata"]))
	}
	start := time.Now()
	var passes []*Pass
	for i := 0; i < 10; i++ {
		p, err := env.Driver.Reconcile(ctx, ns, name)
		if err != nil {
			return nil, fmt.Errorf("finalize pass %d: %w", i+1, err)
		}
		passes = append(passes, p)
		if p.Gone {
			env.Timed("finalize "+ns+"/"+name, start)
			if err := waitCollected(ctx, ns, Str(a, "metadata", "uid")); err != nil {
				return nil, err
			}
			return passes, nil
		}
		if p.Hook != "finalize" {
			return nil, fmt.Errorf("pass %d called %q, want finalize", i+1, p.Hook)
		}
		if p.Response.ResyncAfterSeconds > 0 && !p.Response.Finalized {
			time.Sleep(200 * time.Millisecond)
		}
	}
	a, _ = k.Get(ctx, ActorGVR(), ns, name)
	return nil, fmt.Errorf("not finalized after %d passes; status %s", len(passes), MustJSON(a["status"]))
}

// waitCollected waits until no object of a child resource in ns is
// controlled by, or labelled for, the parent of that UID: the finalize
// answer keeps the children, and garbage collection removes them once the
// parent is gone.
func waitCollected(ctx context.Context, ns, uid string) error {
	start := time.Now()
	var left []string
	deadline := start.Add(2 * time.Minute)
	for {
		var err error
		if left, err = ChildrenLeft(ctx, ns, uid); err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("children left %s after the actor was gone: %s", time.Since(start).Round(time.Second), strings.Join(left, ", "))
		}
		if env.Cluster.gc.exited() {
			return fmt.Errorf("children left: %s; the garbage collector exited (%v):\n%s", strings.Join(left, ", "), env.Cluster.gc.err, env.Cluster.gc.Tail(20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("children left: %s: %w", strings.Join(left, ", "), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ChildrenLeft lists, as "Kind/name", the objects of the child resources in
// ns that the parent of that UID controls or that carry its controller-uid
// label, read from the API server.
func ChildrenLeft(ctx context.Context, ns, uid string) ([]string, error) {
	var left []string
	for _, r := range env.Driver.Kids {
		items, err := env.Cluster.Client.List(ctx, r, ns, "")
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", r.Resource, err)
		}
		for _, it := range items {
			if ControllerUID(it) == uid || Str(it, "metadata", "labels", controllerUIDLabel) == uid {
				left = append(left, r.Kind+"/"+Str(it, "metadata", "name"))
			}
		}
	}
	sort.Strings(left)
	return left, nil
}

// WantMessages fails the test unless queue holds want messages (when says at which step).
func WantMessages(t *testing.T, conn *amqp.Connection, queue string, want int, when string) {
	t.Helper()
	switch n := Messages(t, conn, queue); n {
	case -1:
		t.Fatalf("%s: queue %s is gone", when, queue)
	case want:
	default:
		t.Errorf("%s: queue %s holds %d messages, want %d", when, queue, n, want)
	}
}

// SQSQueueURL is the URL of the SQS emulator's queue, failing the test when there is none.
func SQSQueueURL(t *testing.T, ctx context.Context, queue string) string {
	t.Helper()
	out, err := SQSClient().GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue), QueueOwnerAWSAccountId: aws.String("000000000000")})
	if err != nil {
		t.Fatalf("GetQueueUrl %s: %v", queue, err)
	}
	return aws.ToString(out.QueueUrl)
}
