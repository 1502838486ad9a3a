package rabbitmq

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// BenchmarkRabbitMQEnsure measures what an Ensure costs the service
// against the real broker (docs/performance.md#owner-records): a new queue,
// an existing one (a steady actor's ensure once the cache has expired),
// one another claim holds (a standby actor's every sync), and the owner
// record's declare alone, which the first two include.
func BenchmarkRabbitMQEnsure(b *testing.B) {
	r := newBroker(b)
	ctx := context.Background()
	var made []string
	b.Cleanup(func() { deleteQueuesAndRecords(made) })
	ensure := func(b *testing.B, q transport.Queue) {
		if err := r.Ensure(ctx, q); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("new queue", func(b *testing.B) {
		prefix := testenv.ActorName("new")
		for i := 0; i < b.N; i++ {
			q := transport.Queue{Actor: fmt.Sprintf("%s-%d", prefix, i)}
			made = append(made, q.Name())
			ensure(b, q)
		}
	})
	owner := transport.Queue{Actor: testenv.ActorName("again")}
	made = append(made, owner.Name())
	ensure(b, owner)
	b.Run("existing queue", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ensure(b, owner)
		}
	})
	rival := transport.Queue{Namespace: "bench", Actor: "x", Scoped: true}
	held := transport.Queue{Actor: rival.Name()[len("asya-"):]} // a nested actor naming the flat queue
	made = append(made, rival.Name())
	ensure(b, rival)
	b.Run("held queue", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, ok := transport.HeldBy(r.Ensure(ctx, held)); !ok {
				b.Fatalf("%s: not held by %s", held.Name(), rival.Claim())
			}
		}
	})
	b.Run("owner record alone", func(b *testing.B) {
		ch := amqpChannel(b)
		prefix := testenv.ActorName("record")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			queue := fmt.Sprintf("asya-%s-%d", prefix, i)
			made = append(made, queue)
			if _, err := claimAs(ch, queue, "bench", false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRabbitMQDelete measures what a finalize's Delete costs against
// the real broker (docs/performance.md#owner-records), in time and, when
// the broker runs on this machine, in the broker's CPU (broker-ms/op): an
// owned queue and its DLQ, each with its owner record checked before and
// deleted after; an owned queue with the DLQ off (none to delete); against
// a single durable queue deleted, the floor of any
// controller with a queue per object, and the owner record's delete alone.
// Each queue is made before its iteration, untimed.
func BenchmarkRabbitMQDelete(b *testing.B) {
	r := newBroker(b, withDLQ)
	ctx := context.Background()
	ch := amqpChannel(b)
	var made []string
	b.Cleanup(func() { deleteQueuesAndRecords(made) })
	brokerCPU, local := testenv.RabbitCPU()
	each := func(b *testing.B, label string, create, del func(q transport.Queue) error) {
		prefix := testenv.ActorName(label)
		var cpu float64
		for i := 0; b.Loop(); i++ {
			q := transport.Queue{Actor: fmt.Sprintf("%s-%d", prefix, i)}
			b.StopTimer()
			made = append(made, q.Name(), q.DLQName())
			if err := create(q); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if local {
				cpu -= brokerCPU()
			}
			if err := del(q); err != nil {
				b.Fatal(err)
			}
			if local {
				cpu += brokerCPU()
			}
		}
		if local {
			b.ReportMetric(cpu*1e3/float64(b.N), "broker-ms/op")
		}
	}
	b.Run("owned queue and DLQ", func(b *testing.B) {
		each(b, "owned", func(q transport.Queue) error { return r.Ensure(ctx, q) },
			func(q transport.Queue) error { return r.Delete(ctx, q) })
	})
	off := newBroker(b)
	b.Run("owned queue, DLQ off", func(b *testing.B) {
		each(b, "off", func(q transport.Queue) error { return off.Ensure(ctx, q) },
			func(q transport.Queue) error { return off.Delete(ctx, q) })
	})
	b.Run("one durable queue", func(b *testing.B) {
		each(b, "floor", func(q transport.Queue) error {
			_, err := ch.QueueDeclare(q.Name(), true, false, false, false, nil)
			return err
		}, func(q transport.Queue) error {
			_, err := ch.QueueDelete(q.Name(), false, false, false)
			return err
		})
	})
	b.Run("owner record alone", func(b *testing.B) {
		each(b, "record", func(q transport.Queue) error { _, err := claimAs(ch, q.Name(), "bench", false); return err },
			func(q transport.Queue) error { return unclaim(ch, q.Name()) })
	})
}

// TestOwnerRecordMemory measures the broker's memory for 1000 owner
// records (ASYA_MEASURE=1; docs/performance.md#owner-records): the node's
// metadata store (mnesia, where an exchange is a row), as the management
// API reports it, before and after. The node's RSS moves by more than
// that between two reads.
func TestOwnerRecordMemory(t *testing.T) {
	if os.Getenv("ASYA_MEASURE") != "1" {
		t.Skip("a measurement: ASYA_MEASURE=1")
	}
	testenv.NeedRabbitManagement(t)
	const n = 1000
	var nodes []struct {
		Name string `json:"name"`
	}
	testenv.Management(t, http.MethodGet, "/api/nodes", &nodes)
	mnesia := func() int64 {
		var node struct {
			Memory struct {
				Mnesia int64 `json:"mnesia"`
			} `json:"memory"`
		}
		testenv.Management(t, http.MethodGet, "/api/nodes/"+nodes[0].Name+"?memory=true", &node)
		return node.Memory.Mnesia
	}
	ch := amqpChannel(t)
	prefix := testenv.ActorName("mem")
	var made []string
	t.Cleanup(func() { deleteQueuesAndRecords(made) })
	before := mnesia()
	for i := range n {
		queue := fmt.Sprintf("asya-%s-%d", prefix, i)
		made = append(made, queue)
		if _, err := claimAs(ch, queue, "team-a/"+queue, false); err != nil {
			t.Fatal(err)
		}
	}
	after := mnesia()
	t.Logf("%d owner records: mnesia %d → %d bytes, %d bytes per record", n, before, after, (after-before)/n)
}
