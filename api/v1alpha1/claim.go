package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// ClaimFields are the fields Crossplane adds to the spec of every claim:
// upstream's charts write some (its crew chart, compositionSelector), and
// Crossplane's API server defaults or sets the others, so a claim exported
// from an upstream installation carries them all. asya-sync has no
// compositions: it accepts them, so that those manifests apply unchanged
// under kubectl's strict field validation, and ignores them. They belong
// to the flat shape (ShapeOf): a 0.3 actor never had them.
//
// Their schemas are open (any object, any string): they are never read,
// and refusing a value Crossplane accepts would refuse a manifest upstream
// applies.
type ClaimFields struct {
	// CompositionRef is Crossplane's: ignored by asya-sync.
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
	// it): ignored by asya-sync, which picks the transport from
	// spec.transport or flatActors.transport.
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
