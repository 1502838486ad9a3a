package config

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
	"github.com/asya-sh/asya-sync/transport/sqs"
)

func TestParseDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`
transports:
  rabbitmq: {type: rabbitmq, config: {host: mq}}
  sqs: {type: sqs, enabled: false, config: {region: eu-west-1, accountId: "1"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QueueCacheTTL.Duration != 5*time.Minute {
		t.Errorf("queueCacheTTL = %v, want 5m", cfg.QueueCacheTTL.Duration)
	}
	if cfg.Watch != WatchDefault || cfg.RuntimeDelivery != asyaruntime.ConfigMap || cfg.RuntimeUpdate != asyaruntime.Pinned {
		t.Errorf("watch = %+v, runtimeDelivery = %q, runtimeUpdate = %q; want everything watched, a ConfigMap, Pinned",
			cfg.Watch, cfg.RuntimeDelivery, cfg.RuntimeUpdate)
	}
	rmq := cfg.Transports["rabbitmq"]
	wantRMQ := &rabbitmq.Settings{Host: "mq", Port: 5672, VHost: "/", Username: "guest", Exchange: "asya",
		Queues: transport.Queues{DLQ: transport.DLQ{MaxRetryCount: 3}}}
	if diff := cmp.Diff(transport.Kind(wantRMQ), rmq.Kind); diff != "" {
		t.Errorf("rabbitmq defaults (-want +got):\n%s", diff)
	}
	if !rmq.Enabled || rmq.Name != "rabbitmq" || !wantRMQ.Queues.AutoCreateQueues() {
		t.Errorf("rabbitmq: enabled=%v name=%q", rmq.Enabled, rmq.Name)
	}
	s, ok := cfg.Transports["sqs"].Kind.(*sqs.Settings)
	if !ok || cfg.Transports["sqs"].Enabled || *s.WaitTimeSeconds != 20 || s.Queues.DLQ.RetentionDays != 14 {
		t.Errorf("sqs: %+v", cfg.Transports["sqs"])
	}
	if diff := cmp.Diff([]string{"rabbitmq"}, slices.Sorted(maps.Keys(cfg.Enabled()))); diff != "" {
		t.Errorf("enabled (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"rabbitmq", "sqs"}, cfg.TransportNames()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top-level key", "sidecarImag: x", `unknown field "sidecarImag"`},
		{"unknown transport key", "transports: {r: {type: rabbitmq, enable: true, config: {host: h}}}", `unknown field "enable"`},
		{"unknown config key", "transports: {r: {type: rabbitmq, config: {host: h, hots: x}}}", `transports.r.config: unknown field "hots"`},
		{"missing type", "transports: {r: {config: {host: h}}}", "transports.r.type: required (pubsub, rabbitmq or sqs)"},
		{"unknown type", "transports: {r: {type: kafka}}", `transports.r.type: unknown transport type "kafka" (want pubsub, rabbitmq or sqs)`},
		{"rabbitmq without host", "transports: {r: {type: rabbitmq}}", "transports.r.config.host: required"},
		{"bad port", "transports: {r: {type: rabbitmq, config: {host: h, port: 70000}}}", "transports.r.config.port: 70000"},
		{"username the sidecar's URL breaks", "transports: {r: {type: rabbitmq, config: {host: h, username: 'ops/team'}}}", `transports.r.config.username: holds '/', which the Asya sidecar's AMQP URL cannot carry`},
		{"half a secret ref", "transports: {r: {type: rabbitmq, config: {host: h, passwordSecretRef: {name: s}}}}", "transports.r.config.passwordSecretRef: needs both"},
		{"sqs without region", "transports: {s: {type: sqs, config: {accountId: '1'}}}", "transports.s.config.region: required"},
		{"sqs without account", "transports: {s: {type: sqs, config: {region: r}}}", "transports.s.config.accountId: required"},
		{"sqs wait too long", "transports: {s: {type: sqs, config: {region: r, accountId: '1', waitTimeSeconds: 30}}}", "transports.s.config.waitTimeSeconds: 30"},
		{"sqs half credentials", "transports: {s: {type: sqs, config: {region: r, accountId: '1', credentials: {accessKeyIdSecretRef: {name: a, key: b}}}}}", "transports.s.config.credentials: set both"},
		{"retention on rabbitmq", "transports: {r: {type: rabbitmq, config: {host: h, queues: {dlq: {retentionDays: 3}}}}}", "transports.r.config.queues.dlq.retentionDays"},
		{"sqs retention too long", "transports: {s: {type: sqs, config: {region: r, accountId: '1', queues: {dlq: {retentionDays: 20}}}}}", "transports.s.config.queues.dlq.retentionDays: 20"},
		{"create queues left alone", "transports: {r: {type: rabbitmq, config: {host: h, queues: {manage: false, autoCreate: true}}}}", "transports.r.config.queues.autoCreate: true contradicts queues.manage: false"},
		{"negative ttl", "queueCacheTTL: -1m", "queueCacheTTL: must not be negative"},
		{"bad ttl", "queueCacheTTL: soon", "soon"},
		{"zero ttl", "queueCacheTTL: '0'", "queueCacheTTL: 0s is less than 1s: every sync would call the broker"},
		{"zero ttl with unit", "queueCacheTTL: 0s", "queueCacheTTL: 0s is less than 1s"},
		{"ttl below a second", "queueCacheTTL: 500ms", "queueCacheTTL: 500ms is less than 1s"},
		{"retry count on rabbitmq", "transports: {r: {type: rabbitmq, config: {host: h, queues: {dlq: {enabled: true, maxRetryCount: 5}}}}}",
			"transports.r.config.queues.dlq.maxRetryCount: 5 does nothing on RabbitMQ, whose classic queues count no deliveries"},
		{"unknown watch key", "watch: {hpas: false}", `unknown field "hpas"`},
		{"unknown runtime delivery", "runtimeDelivery: inline", `runtimeDelivery: "inline" is not configMap, podTemplate or initContainer`},
		{"init container without image", "runtimeDelivery: initContainer", "runtimeImage: required with runtimeDelivery initContainer"},
		{"unknown runtime update", "runtimeUpdate: latest", `runtimeUpdate: "latest" is not Pinned or Immediate`},
		{"flat transport not configured", "flatActors: {transport: q}\ntransports: {r: {type: rabbitmq, config: {host: h}}}",
			`flatActors.transport: "q" is not configured (configured: [r])`},
		{"flat transport disabled", "flatActors: {transport: s}\ntransports: {r: {type: rabbitmq, config: {host: h}}, s: {type: sqs, enabled: false, config: {region: r, accountId: '1'}}}",
			`flatActors.transport: "s" is disabled (transports.s.enabled: false); enabled: [r]`},
		{"flat sump is the sink", "flatActors: {sink: end, sump: end}", `flatActors.sump: "end" is the sink's name too`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestFlatTransport: the transport of flat actors that name none is the
// one set, else the only enabled one; with none or several enabled and
// none set there is none.
func TestFlatTransport(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"set", "flatActors: {transport: s}\ntransports: {r: {type: rabbitmq, config: {host: h}}, s: {type: sqs, config: {region: r, accountId: '1'}}}", "s"},
		{"the only enabled one", "transports: {r: {type: rabbitmq, config: {host: h}}, s: {type: sqs, enabled: false, config: {region: r, accountId: '1'}}}", "r"},
		{"none enabled", "transports: {s: {type: sqs, enabled: false, config: {region: r, accountId: '1'}}}", ""},
		// An installation of 0.3 actors on two transports starts as it did
		// before flat actors: none is chosen, and a flat actor naming none
		// says so in its status.
		{"two enabled, none set", "transports: {r: {type: rabbitmq, config: {host: h}}, s: {type: sqs, config: {region: r, accountId: '1'}}}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.FlatActors.Transport != tt.want {
				t.Errorf("flatActors.transport = %q, want %q", cfg.FlatActors.Transport, tt.want)
			}
		})
	}
}

func TestWatchAndRuntimeDelivery(t *testing.T) {
	cfg, err := Parse([]byte("watch: {pods: false, namesakes: false}\nruntimeDelivery: podTemplate"))
	if err != nil {
		t.Fatal(err)
	}
	want := Watch{Pods: Unseen, Secrets: Read, Namesakes: Unseen}
	if cfg.Watch != want || cfg.RuntimeDelivery != asyaruntime.PodTemplate {
		t.Errorf("watch = %+v, runtimeDelivery = %q; want %+v and podTemplate", cfg.Watch, cfg.RuntimeDelivery, want)
	}
	for _, tc := range []struct {
		yaml string
		want Watch
	}{
		{"{pods: true, namesakes: true}", Watch{Pods: Watched, Secrets: Read, Namesakes: Watched}},
		{"{pods: false, namesakes: false}", Watch{Pods: Unseen, Secrets: Read, Namesakes: Unseen}},
		{"{secrets: true}", Watch{Pods: PodsWhileUnhealthy, Secrets: Watched, Namesakes: Read}},
		{"{secrets: false}", Watch{Pods: PodsWhileUnhealthy, Secrets: Unseen, Namesakes: Read}},
		{"{pods: whileUnhealthy, namesakes: read}", WatchDefault},
	} {
		if cfg, err := Parse([]byte("watch: " + tc.yaml)); err != nil || cfg.Watch != tc.want {
			t.Errorf("watch: %s: got %+v, %v; want %+v", tc.yaml, cfg.Watch, err, tc.want)
		}
	}
	for yaml, want := range map[string]string{
		"{pods: sometimes}":           `watch.pods: "sometimes" is not true, false or whileUnhealthy`,
		"{pods: read}":                `watch.pods: "read" is not true, false or whileUnhealthy`,
		"{namesakes: whileUnhealthy}": `watch.namesakes: "whileUnhealthy" is not true, false or read`,
		"{secrets: whileUnhealthy}":   `watch.secrets: "whileUnhealthy" is not true, false or read`,
	} {
		if _, err := Parse([]byte("watch: " + yaml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("watch: %s: err = %v, want %q", yaml, err, want)
		}
	}
	cfg, err = Parse([]byte("runtimeDelivery: initContainer\nruntimeImage: registry.example/asya-sync:1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RuntimeDelivery != asyaruntime.InitContainer || cfg.RuntimeImage != "registry.example/asya-sync:1.0.0" {
		t.Errorf("runtimeDelivery = %q, runtimeImage = %q; want initContainer and the image", cfg.RuntimeDelivery, cfg.RuntimeImage)
	}
	if cfg, err = Parse([]byte("runtimeUpdate: Immediate")); err != nil || cfg.RuntimeUpdate != asyaruntime.Immediate {
		t.Errorf("runtimeUpdate: Immediate gives %v, %v", cfg, err)
	}
}

func TestSecretRefs(t *testing.T) {
	cfg, err := Parse([]byte(`
flatActors: {transport: r}
transports:
  r: {type: rabbitmq, config: {host: h, passwordSecretRef: {name: mq, key: pw}}}
  s: {type: sqs, config: {region: r, accountId: "1", credentials: {accessKeyIdSecretRef: {name: aws, key: id}, secretAccessKeySecretRef: {name: aws, key: secret}}}}
  plain: {type: rabbitmq, config: {host: h}}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string][]transport.SecretKeyRef{
		"r":     {{Name: "mq", Key: "pw"}},
		"s":     {{Name: "aws", Key: "id"}, {Name: "aws", Key: "secret"}},
		"plain": nil,
		"none":  nil,
	}
	for name, want := range tests {
		if diff := cmp.Diff(want, cfg.Transports[name].SecretRefs()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

func TestSidecarSecurityContext(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       *corev1.SecurityContext
	}{
		{"absent: the restricted default", "gatewayURL: ''", DefaultSidecarSecurityContext()},
		{"set: taken as written", "sidecarSecurityContext: {runAsUser: 2000, readOnlyRootFilesystem: true}",
			&corev1.SecurityContext{RunAsUser: ptr.To[int64](2000), ReadOnlyRootFilesystem: ptr.To(true)}},
		{"empty: nothing set", "sidecarSecurityContext: {}", &corev1.SecurityContext{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, cfg.SidecarSecurityContext); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Parse([]byte("sidecarSecurityContext: {runAsRoot: false}")); err == nil || !strings.Contains(err.Error(), `unknown field "runAsRoot"`) {
		t.Errorf("unknown key: error = %v, want unknown field", err)
	}
}

// TestRabbitMQRetryCountDefault: the chart's default values set
// maxRetryCount 3 under the RabbitMQ transport, which stays valid.
func TestRabbitMQRetryCountDefault(t *testing.T) {
	if _, err := Parse([]byte("transports: {r: {type: rabbitmq, config: {host: h, queues: {dlq: {enabled: false, maxRetryCount: 3}}}}}")); err != nil {
		t.Errorf("maxRetryCount 3 on RabbitMQ: %v", err)
	}
	if _, err := Parse([]byte("queueCacheTTL: 1s")); err != nil {
		t.Errorf("queueCacheTTL 1s: %v", err)
	}
}

// TestWatchReadsAPI: the service needs an API client when any kind of
// related object is read by it, and only then.
func TestWatchReadsAPI(t *testing.T) {
	for _, tc := range []struct {
		watch Watch
		want  bool
	}{
		{WatchDefault, true},
		{Watch{Pods: PodsWhileUnhealthy, Secrets: Watched, Namesakes: Unseen}, true},
		{Watch{Pods: Unseen, Secrets: Read, Namesakes: Watched}, true},
		{Watch{Pods: Watched, Secrets: Unseen, Namesakes: Read}, true},
		{Watch{Pods: Watched, Secrets: Watched, Namesakes: Watched}, false},
		{Watch{Pods: Unseen, Secrets: Unseen, Namesakes: Unseen}, false},
	} {
		if got := tc.watch.ReadsAPI(); got != tc.want {
			t.Errorf("%+v.ReadsAPI() = %v, want %v", tc.watch, got, tc.want)
		}
	}
}
