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

// Watch says where the hook learns of each kind of related object. One
// the customize hook asks Metacontroller for costs it a cluster-wide
// watch and, on every event of that resource anywhere in the cluster, a
// pass over every actor (docs/performance.md#what-metacontroller-pays);
// pods, Secrets and namesakes are read by the service itself by default. Each can
// be turned off, and the status then says what it is not told.
type Watch struct {
	// Pods: how the status learns of the actor's pods, for pod-level
	// health (RuntimeError, ImagePullError, PendingResources, ...): true,
	// false or whileUnhealthy.
	Pods Source `json:"pods"`
	// Secrets: the Secrets the transport references, so that a missing or
	// unusable one is a ConfigError before any pod fails on it: true,
	// false or read.
	Secrets Source `json:"secrets"`
	// Namesakes: the actors that claim the actor's queue
	// (docs/design.md#queues): of its name in every namespace for a nested
	// actor, of its spec.actor in its namespace for a flat one; true,
	// false or read. Without them every actor takes itself for its
	// queue's only claimant.
	Namesakes Source `json:"namesakes"`
}

// Source is where the hook learns of one kind of related object.
type Source string

const (
	// Watched (true): a related rule; Metacontroller watches the objects
	// in the whole cluster, and every event of one costs it a pass over
	// every actor.
	Watched Source = "true"
	// Unseen (false): not at all; the status says so.
	Unseen Source = "false"
	// PodsWhileUnhealthy (pods only): asya-sync lists an actor's pods
	// itself, from the API server, while the observed workload is not
	// settled; a settled one needs no pod list.
	PodsWhileUnhealthy Source = "whileUnhealthy"
	// Read (namesakes and secrets): asya-sync reads the objects itself,
	// from the API server: the actors of the claim, by a field selector
	// that returns them alone; the Secrets the transport references, by
	// name.
	Read Source = "read"
)

// Off: not seen at all (false, or a Watch written without it).
func (s Source) Off() bool { return s != Watched && s != PodsWhileUnhealthy && s != Read }

// UnmarshalJSON takes true, false or a word; Parse checks the word is
// the one its field takes.
func (s *Source) UnmarshalJSON(data []byte) error {
	*s = Source(strings.Trim(string(data), `"`))
	return nil
}

// check says what is wrong with s as the value of field, which reads
// the objects itself when it is read.
func (s Source) check(field string, read Source) error {
	if s != Watched && s != Unseen && s != read {
		return fmt.Errorf("%s: %q is not true, false or %s", field, string(s), read)
	}
	return nil
}

// ReadsAPI: the service reads some related objects itself, from the API
// server, and needs a client for it.
func (w Watch) ReadsAPI() bool {
	return w.Pods == PodsWhileUnhealthy || w.Secrets == Read || w.Namesakes == Read
}

// WatchDefault is the default: everything the status can report, asking
// Metacontroller for no related rule that costs it a pass over every
// actor on every event of a busy resource: pods, Secrets and namesakes
// are read by asya-sync itself.
var WatchDefault = Watch{Pods: PodsWhileUnhealthy, Secrets: Read, Namesakes: Read}

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
			Pods      *Source `json:"pods"`
			Secrets   *Source `json:"secrets"`
			Namesakes *Source `json:"namesakes"`
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
	if err := errors.Join(cfg.Watch.Pods.check("watch.pods", PodsWhileUnhealthy),
		cfg.Watch.Secrets.check("watch.secrets", Read),
		cfg.Watch.Namesakes.check("watch.namesakes", Read)); err != nil {
		return nil, err
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
