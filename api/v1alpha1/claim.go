package v1alpha1

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// ClaimFields are the fields Crossplane adds to the spec of every claim:
// upstream's charts write some (its crew chart, compositionSelector), and
// Crossplane's API server defaults or sets the others, so a claim exported
// from an upstream installation carries them all. asya-sync has no
// compositions: it accepts them, so that those manifests apply unchanged
// under kubectl's strict field validation, and reads only the transport
// the composition they pick ran the claim on (CompositionTransport). They
// belong to the flat shape (ShapeOf): a 0.3 actor never had them.
//
// Their schemas are open (any object, any string): refusing a value
// Crossplane accepts would refuse a manifest upstream applies.
type ClaimFields struct {
	// CompositionRef is Crossplane's: the composition the claim runs on.
	// Upstream's are named asyncactor-<transport> (rabbitmq, sqs, pubsub),
	// and asya-sync runs the actor on that transport; a spec.transport
	// naming another is refused.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	CompositionRef *runtime.RawExtension `json:"compositionRef,omitempty"`
	// CompositionRevisionRef is Crossplane's: ignored by asya-sync.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	CompositionRevisionRef *runtime.RawExtension `json:"compositionRevisionRef,omitempty"`
	// CompositionRevisionSelector is Crossplane's: ignored by asya-sync.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	CompositionRevisionSelector *runtime.RawExtension `json:"compositionRevisionSelector,omitempty"`
	// CompositionSelector is Crossplane's (upstream's crew chart writes
	// it): the labels that pick the claim's composition. Without a
	// compositionRef naming one of upstream's compositions, asya-sync runs
	// the actor on the transport of matchLabels["asya.sh/transport"]; a
	// spec.transport naming another is refused.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	CompositionSelector *runtime.RawExtension `json:"compositionSelector,omitempty"`
	// CompositionUpdatePolicy is Crossplane's: ignored by asya-sync.
	// +optional
	CompositionUpdatePolicy string `json:"compositionUpdatePolicy,omitempty"`
	// CompositeDeletePolicy is Crossplane's: ignored by asya-sync.
	// +optional
	CompositeDeletePolicy string `json:"compositeDeletePolicy,omitempty"`
	// ResourceRef is Crossplane's: ignored by asya-sync.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	ResourceRef *runtime.RawExtension `json:"resourceRef,omitempty"`
	// WriteConnectionSecretToRef is Crossplane's: ignored by asya-sync,
	// which writes no connection Secret.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	WriteConnectionSecretToRef *runtime.RawExtension `json:"writeConnectionSecretToRef,omitempty"`
	// PublishConnectionDetailsTo is Crossplane's: ignored by asya-sync.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	PublishConnectionDetailsTo *runtime.RawExtension `json:"publishConnectionDetailsTo,omitempty"`
}

// Upstream's compositions (deploy/helm-charts/asya-crossplane) are named
// CompositionPrefix+<transport> and labelled TransportLabel: <transport>,
// the transport type they render the claim for.
const (
	CompositionPrefix = "asyncactor-"
	TransportLabel    = "asya.sh/transport"
)

// CompositionTransport is the transport type the claim's composition ran
// it on, and the field that says so: compositionRef.name, when it names
// one of upstream's compositions (Crossplane uses the reference once it is
// set, whatever the selector says), else compositionSelector.matchLabels'
// asya.sh/transport. Both empty when neither names one.
func (c ClaimFields) CompositionTransport() (kind, field string) {
	if c.CompositionRef != nil {
		var ref struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(c.CompositionRef.Raw, &ref) == nil {
			if t, ok := strings.CutPrefix(ref.Name, CompositionPrefix); ok && t != "" {
				return t, "spec.compositionRef.name"
			}
		}
	}
	if c.CompositionSelector != nil {
		var sel struct {
			MatchLabels map[string]string `json:"matchLabels"`
		}
		if json.Unmarshal(c.CompositionSelector.Raw, &sel) == nil && sel.MatchLabels[TransportLabel] != "" {
			return sel.MatchLabels[TransportLabel], `spec.compositionSelector.matchLabels["` + TransportLabel + `"]`
		}
	}
	return "", ""
}
