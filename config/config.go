// Package config loads and checks the service configuration (docs/design.md#service-configuration).
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/children"
	asyaruntime "github.com/asya-sh/asya-sync/runtime"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

// Config is the whole service configuration.
type Config struct {
	SidecarImage string `json:"sidecarImage"`
	// SidecarSecurityContext is the injected sidecar's securityContext
	// unless an actor sets its own; DefaultSidecarSecurityContext when the
	// key is absent.
	SidecarSecurityContext *corev1.SecurityContext `json:"sidecarSecurityContext"`
	GatewayURL             string                  `json:"gatewayURL"`
	QueueCacheTTL          metav1.Duration         `json:"queueCacheTTL"`
	Transports             map[string]Transport    `json:"transports"`
	Watch                  Watch                   `json:"watch"`
	RuntimeDelivery        asyaruntime.Delivery    `json:"runtimeDelivery"`
	// RuntimeUpdate is what a new runtime script does to running actors:
	// Pinned (the default) or Immediate (docs/upgrade.md).
	RuntimeUpdate asyaruntime.Update `json:"runtimeUpdate"`
	// RuntimeImage is asya-sync's own image, whose binary writes the
	// runtime script into the pods with asyaruntime.InitContainer.
	RuntimeImage string `json:"runtimeImage"`
	// FlatActors configures actors of the flat shape.
	FlatActors FlatActors `json:"flatActors"`
}

// Watch says which related objects the customize hook asks Metacontroller
// for. Each costs Metacontroller a cluster-wide watch and, on every event
// of that resource anywhere in the cluster, a pass over every actor
// (docs/performance.md#what-metacontroller-pays); each can be turned off,
// and the status then says what it is not told.
type Watch struct {
	// Pods: how the status learns of the actor's pods, for pod-level
	// health (RuntimeError, ImagePullError, PendingResources, ...).
	Pods PodWatch `json:"pods"`
	// Secrets: the Secrets the transport references, so that a missing one
	// is a ConfigError before any pod fails on it.
	Secrets bool `json:"secrets"`
	// Namesakes: the actors of the same name in every namespace, which
	// claim the same queue (docs/design.md#queues). Without them every
	// actor takes itself for its queue's only claimant.
	Namesakes bool `json:"namesakes"`
}

// PodWatch is where pod-level health comes from: watch.pods true, false
// or whileUnhealthy.
type PodWatch string

const (
	// PodsWatched (true): Metacontroller watches every actor's pods, and
	// every pod event of the cluster costs it a pass over every actor.
	PodsWatched PodWatch = "true"
	// PodsOff (false): the workload's replica counts only.
	PodsOff PodWatch = "false"
	// PodsWhileUnhealthy: asya-sync lists an actor's pods itself, from the
	// API server, while the observed workload is not settled; a settled
	// one needs no pod list. Metacontroller watches no pods.
	PodsWhileUnhealthy PodWatch = "whileUnhealthy"
)

// Off: no pod-level health (false, or a Watch written without it).
func (p PodWatch) Off() bool { return p != PodsWatched && p != PodsWhileUnhealthy }

// UnmarshalJSON takes true, false or "whileUnhealthy".
func (p *PodWatch) UnmarshalJSON(data []byte) error {
	switch w := PodWatch(strings.Trim(string(data), `"`)); w {
	case PodsWatched, PodsOff, PodsWhileUnhealthy:
		*p = w
		return nil
	}
	return fmt.Errorf("watch.pods: %s is not true, false or %s", data, PodsWhileUnhealthy)
}

// WatchDefault is the default: everything the status can report, pods
// read by asya-sync only while they can tell something the workload
// does not.
var WatchDefault = Watch{Pods: PodsWhileUnhealthy, Secrets: true, Namesakes: true}

// Transport is one named transport: its name, whether it is enabled, and
// its kind with the kind's decoded and checked settings.
type Transport struct {
	Name    string
	Enabled bool
	Kind    brokers.Kind
}

// DefaultQueueCacheTTL is queueCacheTTL when the key is absent (docs/design.md#service-configuration).
const DefaultQueueCacheTTL = 5 * time.Minute

// MinQueueCacheTTL is the shortest queueCacheTTL accepted.
const MinQueueCacheTTL = time.Second

// SidecarUID is the numeric id of the user the published sidecar image
// runs as. The image names its user (app), and the kubelet can verify
// runAsNonRoot only for a numeric id.
const SidecarUID = 1000

// DefaultSidecarSecurityContext passes the Pod Security "restricted"
// profile: no privilege escalation, no capabilities, a non-root user given
// by number, the runtime's default seccomp profile.
func DefaultSidecarSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](SidecarUID),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// Load reads the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes YAML strictly, applies defaults and checks consistency.
func Parse(data []byte) (*Config, error) {
	var raw struct {
		SidecarImage           string                  `json:"sidecarImage"`
		SidecarSecurityContext *corev1.SecurityContext `json:"sidecarSecurityContext"`
		GatewayURL             string                  `json:"gatewayURL"`
		QueueCacheTTL          json.RawMessage         `json:"queueCacheTTL"`
		Transports             map[string]rawTransport `json:"transports"`
		Watch                  struct {
			Pods      *PodWatch `json:"pods"`
			Secrets   *bool     `json:"secrets"`
			Namesakes *bool     `json:"namesakes"`
		} `json:"watch"`
		RuntimeDelivery asyaruntime.Delivery `json:"runtimeDelivery"`
		RuntimeUpdate   asyaruntime.Update   `json:"runtimeUpdate"`
		RuntimeImage    string               `json:"runtimeImage"`
		FlatActors      FlatActors           `json:"flatActors"`
	}
	if err := decodeStrict(data, &raw); err != nil {
		return nil, err
	}
	cfg := &Config{
		SidecarImage:           raw.SidecarImage,
		SidecarSecurityContext: raw.SidecarSecurityContext,
		GatewayURL:             raw.GatewayURL,
		Transports:             map[string]Transport{},
		Watch: Watch{
			Pods:      ptr.Deref(raw.Watch.Pods, WatchDefault.Pods),
			Secrets:   ptr.Deref(raw.Watch.Secrets, WatchDefault.Secrets),
			Namesakes: ptr.Deref(raw.Watch.Namesakes, WatchDefault.Namesakes),
		},
		RuntimeDelivery: raw.RuntimeDelivery,
		RuntimeUpdate:   raw.RuntimeUpdate,
		RuntimeImage:    raw.RuntimeImage,
	}
	switch {
	case cfg.RuntimeUpdate == "":
		cfg.RuntimeUpdate = asyaruntime.Pinned
	case !cfg.RuntimeUpdate.Valid():
		return nil, fmt.Errorf("runtimeUpdate: %q is not %s or %s", raw.RuntimeUpdate, asyaruntime.Pinned, asyaruntime.Immediate)
	}
	if cfg.RuntimeDelivery == "" {
		cfg.RuntimeDelivery = asyaruntime.ConfigMap
	}
	if err := children.CheckDelivery(cfg.RuntimeDelivery, cfg.RuntimeImage); err != nil {
		return nil, err
	}
	if cfg.SidecarSecurityContext == nil {
		cfg.SidecarSecurityContext = DefaultSidecarSecurityContext()
	}
	ttl, err := queueCacheTTL(raw.QueueCacheTTL)
	if err != nil {
		return nil, fmt.Errorf("queueCacheTTL: %w", err)
	}
	cfg.QueueCacheTTL.Duration = ttl
	for name, rt := range raw.Transports {
		t, err := rt.build(name)
		if err != nil {
			return nil, fmt.Errorf("transports.%s.%w", name, err)
		}
		cfg.Transports[name] = t
	}
	cfg.FlatActors = raw.FlatActors
	if err := cfg.FlatActors.check(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// queueCacheTTL decodes and checks the key's value; absent, the default.
func queueCacheTTL(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return DefaultQueueCacheTTL, nil
	}
	var d metav1.Duration
	if err := json.Unmarshal(raw, &d); err != nil {
		return 0, err
	}
	switch {
	case d.Duration < 0:
		return 0, errors.New("must not be negative")
	// Below a second the cache holds nothing from one sync to the next:
	// every sync calls the broker, and every actor with traffic writes new
	// message counts into its status each time.
	case d.Duration < MinQueueCacheTTL:
		return 0, fmt.Errorf("%s is less than %s: every sync would call the broker and rewrite the status of every actor with messages; leave it out for %s",
			d.Duration, MinQueueCacheTTL, DefaultQueueCacheTTL)
	}
	return d.Duration, nil
}

// TransportNames returns the configured transport names, sorted.
func (c *Config) TransportNames() []string {
	names := make([]string, 0, len(c.Transports))
	for n := range c.Transports {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// EnabledNames returns the enabled transports' names, sorted.
func (c *Config) EnabledNames() []string {
	return slices.Sorted(maps.Keys(c.Enabled()))
}

// Enabled returns the kinds of the enabled transports, by name.
func (c *Config) Enabled() map[string]brokers.Kind {
	kinds := map[string]brokers.Kind{}
	for name, t := range c.Transports {
		if t.Enabled {
			kinds[name] = t.Kind
		}
	}
	return kinds
}

// SecretRefs lists the Secrets the transport's sidecars and KEDA read, in
// a stable order; none for a transport that is not configured.
func (t Transport) SecretRefs() []transport.SecretKeyRef {
	if t.Kind == nil {
		return nil
	}
	return t.Kind.SecretRefs()
}

func decodeStrict(data []byte, into any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}
