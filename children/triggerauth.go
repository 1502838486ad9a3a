package children

import (
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// TriggerAuthentication returns the actor's TriggerAuthentication when its
// trigger needs credentials that trigger metadata cannot carry, else nil.
func TriggerAuthentication(in Input) *kedav1alpha1.TriggerAuthentication {
	if !in.Decided.ScalingActive {
		return nil
	}
	spec := in.Transport.TriggerAuth()
	if spec == nil {
		return nil
	}
	return &kedav1alpha1.TriggerAuthentication{
		TypeMeta:   kedaTypeMeta("TriggerAuthentication"),
		ObjectMeta: in.objectMeta(TriggerAuthenticationName(in.Actor.Name)),
		Spec:       *spec,
	}
}
