package config

import (
	"fmt"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// FlatActors configures the actors written in the flat shape of upstream
// Asya 0.5+ and 1.x (docs/design.md#two-generations).
type FlatActors struct {
	// Transport serves the flat actors that name none: upstream 1.x picks
	// the transport per installation, not per actor. Empty: the one
	// enabled transport, if there is exactly one; with more, none, and
	// each flat actor that names none says in its status what to set.
	Transport string `json:"transport"`
	// SidecarImage is their sidecar: a release that talks HTTP to the
	// runtime (upstream 0.5.1 and later).
	SidecarImage string `json:"sidecarImage"`
	// Sink and Sump are the actors that end every route of a namespace
	// (the sidecar's ASYA_ACTOR_SINK and ASYA_ACTOR_SUMP); their queues
	// exist as soon as any flat actor of the namespace does.
	Sink string `json:"sink"`
	Sump string `json:"sump"`
}

// Ends are the actors that end the routes of a flat namespace.
func (f FlatActors) Ends() v1alpha1.Ends { return v1alpha1.Ends{Sink: f.Sink, Sump: f.Sump} }

// Upstream's defaults for flat actors.
const (
	// DefaultFlatSidecarImage is the latest upstream sidecar release.
	DefaultFlatSidecarImage = "ghcr.io/deliveryhero/asya-sidecar:1.1.2"
	DefaultSink             = "x-sink"
	DefaultSump             = "x-sump"
)

// check defaults the settings and checks them against cfg's transports.
func (f *FlatActors) check(cfg *Config) error {
	if f.SidecarImage == "" {
		f.SidecarImage = DefaultFlatSidecarImage
	}
	if f.Sink == "" {
		f.Sink = DefaultSink
	}
	if f.Sump == "" {
		f.Sump = DefaultSump
	}
	if f.Sink == f.Sump {
		return fmt.Errorf("flatActors.sump: %q is the sink's name too", f.Sump)
	}
	enabled := cfg.EnabledNames()
	if f.Transport == "" {
		// With several enabled transports and no choice, the service still
		// starts: an installation with no flat actor needs none, and a
		// flat actor that names no spec.transport says what to set.
		if len(enabled) == 1 {
			f.Transport = enabled[0]
		}
		return nil
	}
	t, ok := cfg.Transports[f.Transport]
	switch {
	case !ok:
		return fmt.Errorf("flatActors.transport: %q is not configured (configured: %v)", f.Transport, cfg.TransportNames())
	case !t.Enabled:
		return fmt.Errorf("flatActors.transport: %q is disabled (transports.%s.enabled: false); enabled: %v", f.Transport, f.Transport, enabled)
	}
	return nil
}
