package brokers_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

func TestMain(m *testing.M) {
	testenv.UseTestAWSCredentials()
	os.Exit(m.Run())
}

// openConfig parses the configuration and opens its enabled transports,
// closed after the test.
func openConfig(t *testing.T, yaml string, opts brokers.Options) brokers.Set {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	set, err := brokers.Open(cfg.Enabled(), cfg.QueueCacheTTL.Duration, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

func TestOpenBuildsOneCachedTransportPerEnabledTransport(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitManagement(t)
	testenv.NeedSQS(t)
	mq := testenv.NewRabbitLogin(t)
	a, b := "mq-a-"+testenv.RunID, "mq-b-"+testenv.RunID
	set := openConfig(t, fmt.Sprintf(`
queueCacheTTL: 1m
flatActors: {transport: sqs}
transports:
  %[1]s: {type: rabbitmq, config: {host: %[3]s, port: %[4]d, username: %[5]s, passwordFile: %[6]s}}
  %[2]s: {type: rabbitmq, config: {host: %[3]s, port: %[4]d, username: %[5]s, passwordFile: %[6]s, queues: {dlq: {enabled: true}}}}
  sqs: {type: sqs, config: {region: us-east-1, accountId: "000000000000", endpoint: %[7]s}}
  off: {type: rabbitmq, enabled: false, config: {host: 127.0.0.1}}
`, a, b, mq.Host, mq.Port, mq.Username, mq.PasswordFile, testenv.SQSEndpoint()), brokers.Options{Now: testenv.NewFakeClock().Now})

	if _, ok := set.Get("off"); ok {
		t.Error("a disabled transport was opened")
	}
	if _, ok := set.Get("unknown"); ok {
		t.Error("Get of an unknown transport succeeded")
	}
	ctx := testenv.Context(t)
	for _, name := range []string{a, b, "sqs"} {
		broker, ok := set.Get(name)
		if !ok {
			t.Fatalf("transport %s missing", name)
		}
		if _, cached := broker.(*brokers.Cached); !cached {
			t.Errorf("transport %s is %T, want it behind the cache", name, broker)
		}
		q := transport.Queue{Actor: testenv.ActorName("set"), ProcessingTimeout: 30}
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
		testenv.Eventually(t, 10*time.Second, "one connection for "+name, func() bool {
			return testenv.BrokerConnections(t, "asya-sync/"+name) == 1
		})
	}
}
