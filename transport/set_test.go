package transport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/config"
)

func TestOpenBuildsOneCachedTransportPerEnabledTransport(t *testing.T) {
	t.Parallel()
	needRabbitManagement(t)
	needSQS(t)
	mq := rabbitConfig(t)
	a, b := "mq-a-"+runID, "mq-b-"+runID
	cfg, err := config.Parse(fmt.Appendf(nil, `
queueCacheTTL: 1m
transports:
  %[1]s: {type: rabbitmq, config: {host: %[3]s, port: %[4]d, username: %[5]s, passwordFile: %[6]s, exchange: %[7]s}}
  %[2]s: {type: rabbitmq, config: {host: %[3]s, port: %[4]d, username: %[5]s, passwordFile: %[6]s, exchange: %[7]s, queues: {dlq: {enabled: true}}}}
  sqs: {type: sqs, config: {region: us-east-1, accountId: "000000000000", endpoint: %[8]s}}
  off: {type: rabbitmq, enabled: false, config: {host: 127.0.0.1}}
`, a, b, mq.Host, mq.Port, mq.Username, mq.PasswordFile, testExchange, sqsEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	set, err := Open(cfg, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()

	if _, ok := set.Get("off"); ok {
		t.Error("a disabled transport was opened")
	}
	if _, ok := set.Get("unknown"); ok {
		t.Error("Get of an unknown transport succeeded")
	}
	ctx := testContext(t)
	for _, name := range []string{a, b, "sqs"} {
		broker, ok := set.Get(name)
		if !ok {
			t.Fatalf("transport %s missing", name)
		}
		if _, cached := broker.(*Cached); !cached {
			t.Errorf("transport %s is %T, want it behind the cache", name, broker)
		}
		q := Queue{Actor: actorName("set"), ProcessingTimeout: 30}
		t.Cleanup(func() { _ = broker.Delete(context.Background(), q) })
		if err := broker.Ensure(ctx, q); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := broker.Delete(ctx, q); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Each RabbitMQ transport has a connection of its own.
	for _, name := range []string{a, b} {
		eventually(t, 10*time.Second, "one connection for "+name, func() bool {
			return brokerConnections(t, "asya-sync/"+name) == 1
		})
	}
}
