package brokers_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

func TestMetricsOfOperationsCacheAndBrokerState(t *testing.T) {
	t.Parallel()
	testenv.NeedRabbitMQ(t)
	testenv.NeedSQS(t)
	mq := testenv.NewRabbitLogin(t)
	id := testenv.RunID + "-metrics"
	reg := prometheus.NewRegistry()
	set := openConfig(t, fmt.Sprintf(`
queueCacheTTL: 1m
flatActors: {transport: mq-%[1]s}
transports:
  mq-%[1]s: {type: rabbitmq, config: {host: %[2]s, port: %[3]d, username: %[4]s, passwordFile: %[5]s}}
  mq-down-%[1]s: {type: rabbitmq, config: {host: 127.0.0.1, port: %[6]d}}
  sqs-%[1]s: {type: sqs, config: {region: us-east-1, accountId: "000000000000", endpoint: %[7]s}}
  sqs-down-%[1]s: {type: sqs, config: {region: us-east-1, accountId: "000000000000", endpoint: "http://127.0.0.1:%[8]d"}}
`, id, mq.Host, mq.Port, mq.Username, mq.PasswordFile, testenv.ClosedPort(t), testenv.SQSEndpoint(), testenv.ClosedPort(t)),
		brokers.Options{Now: testenv.NewFakeClock().Now, Metrics: brokers.NewMetrics(reg)})
	if got := testenv.Metrics(t, reg); got["asya_sync_broker_up"] != nil {
		t.Errorf("broker state reported before any broker was used: %v", got["asya_sync_broker_up"])
	}

	ctx := testenv.Context(t)
	for _, kind := range []string{"mq", "sqs"} {
		broker, _ := set.Get(kind + "-" + id)
		q := transport.Queue{Actor: testenv.ActorName("metrics"), ProcessingTimeout: 30}
		for range 2 {
			if err := broker.Ensure(ctx, q); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
		}
		if err := broker.Delete(ctx, q); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		down, _ := set.Get(kind + "-down-" + id)
		if te := transport.AsError(down.Ensure(ctx, q)); te == nil || te.Reason != transport.ReasonBrokerUnavailable {
			t.Errorf("%s down: error %v, want %s", kind, te, transport.ReasonBrokerUnavailable)
		}
	}

	got := testenv.Metrics(t, reg)
	for _, kind := range []string{"mq", "sqs"} {
		up, down := kind+"-"+id, kind+"-down-"+id
		for series, want := range map[string]float64{
			// One Ensure reached the broker; the second was a cache hit.
			`asya_sync_transport_operation_duration_seconds_count{operation="ensure",outcome="ok",transport="` + up + `"}`:                  1,
			`asya_sync_transport_operation_duration_seconds_count{operation="delete",outcome="ok",transport="` + up + `"}`:                  1,
			`asya_sync_transport_operation_duration_seconds_count{operation="ensure",outcome="BrokerUnavailable",transport="` + down + `"}`: 1,
			`asya_sync_queue_cache_lookups_total{result="miss",transport="` + up + `"}`:                                                     1,
			`asya_sync_queue_cache_lookups_total{result="hit",transport="` + up + `"}`:                                                      1,
			`asya_sync_queue_cache_lookups_total{result="miss",transport="` + down + `"}`:                                                   1,
			`asya_sync_broker_up{transport="` + up + `"}`:                                                                                   1,
			`asya_sync_broker_up{transport="` + down + `"}`:                                                                                 0,
		} {
			name := strings.TrimSuffix(series[:strings.Index(series, "{")], "_count")
			if v, ok := got[name][series]; !ok || v != want {
				t.Errorf("%s = %v (present %v), want %v; have %v", series, v, ok, want, keysOf(got[name]))
			}
		}
	}

	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if got := testenv.Metrics(t, reg); got["asya_sync_broker_up"] != nil {
		t.Errorf("closed transports still report their state: %v", got["asya_sync_broker_up"])
	}
}

func keysOf(m map[string]float64) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
