// Package v1alpha1 holds the AsyncActor API (asya.sh/v1alpha1): the Go types
// the CRD in manifests/ is generated from, and the defaults the hooks apply.
//
// +kubebuilder:object:generate=false
// +groupName=asya.sh
package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupVersion is the API group and version of AsyncActor.
var GroupVersion = schema.GroupVersion{Group: "asya.sh", Version: "v1alpha1"}

// Kind is the AsyncActor kind, and Resource its plural resource name.
const (
	Kind     = "AsyncActor"
	Resource = "asyncactors"
)
