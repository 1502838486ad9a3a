package transport

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/testenv"
)

func TestMetricsOfOperationsCacheAndBrokerState(t *testing.T) {
	t.Parallel()
	needRabbitMQ(t)
	needSQS(t)
	mq := rabbitConfig(t)
	id := runID + "-metrics"
	cfg, err := config.Parse(fmt.Appendf(nil, `
queueCacheTTL: 1m
transports:
  mq-%[1]s: {type: rabbitmq, config: {host: %[2]s, port: %[3]d, username: %[4]s, passwordFile: %[5]s, exchange: %[6]s}}
  mq-down-%[1]s: {type: rabbitmq, config: {host: 127.0.0.1, port: %[7]d}}
  sqs-%[1]s: {type: sqs, config: {region: us-east-1, accountId: "000000000000", endpoint: %[8]s}}
  sqs-down-%[1]s: {type: sqs, config: {region: us-east-1, accountId: "000000000000", endpoint: "http://127.0.0.1:%[9]d"}}
`, id, mq.Host, mq.Port, mq.Username, mq.PasswordFile, testExchange, testenv.ClosedPort(t), sqsEndpoint, testenv.ClosedPort(t)))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	set, err := Open(cfg, Options{Now: newFakeClock().Now, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if got := testenv.Metrics(t, reg); got["asya_sync_broker_up"] != nil {
		t.Errorf("broker state reported before any broker was used: %v", got["asya_sync_broker_up"])
	}

	ctx := testContext(t)
	for _, kind := range []string{"mq", "sqs"} {
		broker, _ := set.Get(kind + "-" + id)
		q := Queue{Actor: actorName("metrics"), ProcessingTimeout: 30}
		for range 2 {
			if err := broker.Ensure(ctx, q); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
		}
		if err := broker.Delete(ctx, q); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		down, _ := set.Get(kind + "-down-" + id)
		wantReason(t, down.Ensure(ctx, q), ReasonBrokerUnavailable)
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
