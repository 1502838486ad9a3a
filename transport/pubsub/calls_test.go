package pubsub

import (
	"context"
	"path"
	"slices"
	"testing"

	"google.golang.org/api/option"
	"google.golang.org/grpc"

	"github.com/asya-sh/asya-sync/internal/brokertest"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// callLog records the RPCs a broker makes, by method name.
type callLog struct{ brokertest.Calls }

func (c *callLog) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.Add(path.Base(method))
	return invoker(ctx, method, req, reply, cc, opts...)
}

// TestEnsureCalls measures what one Ensure and one Delete cost on
// Pub/Sub (docs/performance.md#owner-records): a queue that exists, the
// common case, is two reads, and nothing is written while it is as
// configured; a new one is four calls, its record riding on the creates;
// another claim's queue is turned away after reading the topic alone;
// counts cost nothing.
func TestEnsureCalls(t *testing.T) {
	testenv.NeedPubSub(t)
	log := &callLog{}
	b := New("pubsub-calls", testSettings())
	b.extra = []option.ClientOption{option.WithGRPCDialOption(grpc.WithUnaryInterceptor(log.intercept))}
	t.Cleanup(func() { _ = b.Close() })
	ctx := testenv.Context(t)
	first, second := collision(t)
	for _, step := range []struct {
		what string
		do   func() error
		want []string
	}{
		{"a new queue", func() error { return b.Ensure(ctx, first) },
			[]string{"GetTopic", "CreateTopic", "GetSubscription", "CreateSubscription"}},
		{"the same queue again", func() error { return b.Ensure(ctx, first) },
			[]string{"GetTopic", "GetSubscription"}},
		{"the queue, by another claim", func() error { return b.Ensure(ctx, second) },
			[]string{"GetTopic"}},
		{"counts", func() error { _, err := b.Counts(ctx, first); return err }, nil},
		{"delete by the owner", func() error { return b.Delete(ctx, first) },
			[]string{"GetSubscription", "GetTopic", "DeleteSubscription", "DeleteTopic"}},
	} {
		err := step.do()
		if _, held := transport.HeldBy(err); err != nil && !held {
			t.Fatalf("%s: %v", step.what, err)
		}
		got := log.Take()
		t.Logf("%s: %v", step.what, got)
		if !slices.Equal(got, step.want) {
			t.Errorf("%s: calls %v, want %v", step.what, got, step.want)
		}
	}
}
