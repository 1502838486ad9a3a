package children

import (
	"strconv"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// TriggerName names the actor's only trigger. KEDA resolves the names in a
// scalingModifiers formula against trigger names, so a formula refers to
// the queue metric as "queue".
const TriggerName = "queue"

// ScaledObject returns the actor's ScaledObject, or nil when scaling is off
// (or the cluster has no KEDA).
func ScaledObject(in Input) *kedav1alpha1.ScaledObject {
	if !in.Decided.ScalingActive {
		return nil
	}
	s := in.Actor.Spec.Scaling
	return &kedav1alpha1.ScaledObject{
		TypeMeta:   kedaTypeMeta("ScaledObject"),
		ObjectMeta: in.objectMeta(in.Actor.Name),
		Spec: kedav1alpha1.ScaledObjectSpec{
			ScaleTargetRef:  in.scaleTarget(),
			MinReplicaCount: ptr.To(ptr.Deref(s.MinReplicas, v1alpha1.DefaultMinReplicas)),
			MaxReplicaCount: ptr.To(ptr.Deref(s.MaxReplicas, v1alpha1.DefaultMaxReplicas)),
			PollingInterval: ptr.To(s.PollingInterval),
			CooldownPeriod:  ptr.To(ptr.Deref(s.CooldownPeriod, v1alpha1.DefaultCooldownPeriod)),
			Advanced:        advanced(s.Advanced),
			Triggers:        in.triggers(),
		},
	}
}

func kedaTypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: kedav1alpha1.GroupVersion.String(), Kind: kind}
}

// scaleTarget points at the workload Workload builds.
func (in Input) scaleTarget() *kedav1alpha1.ScaleTarget {
	kind := v1alpha1.KindDeployment
	if in.Actor.Spec.Workload.Kind == v1alpha1.KindStatefulSet {
		kind = v1alpha1.KindStatefulSet
	}
	return &kedav1alpha1.ScaleTarget{APIVersion: "apps/v1", Kind: kind, Name: in.Actor.Name}
}

// advanced is KEDA's advanced section: our HPA behaviour, plus what the
// actor asks for in spec.scaling.advanced.
func advanced(a *v1alpha1.AdvancedScaling) *kedav1alpha1.AdvancedConfig {
	cfg := &kedav1alpha1.AdvancedConfig{
		HorizontalPodAutoscalerConfig: &kedav1alpha1.HorizontalPodAutoscalerConfig{Behavior: hpaBehavior()},
	}
	if a != nil {
		cfg.RestoreToOriginalReplicaCount = a.RestoreToOriginalReplicaCount
		cfg.ScalingModifiers = kedav1alpha1.ScalingModifiers{
			Formula:          a.Formula,
			Target:           a.Target,
			ActivationTarget: a.ActivationTarget,
			MetricType:       autoscalingv2.MetricTargetType(a.MetricType),
		}
	}
	return cfg
}

// hpaBehavior scales up fast (no stabilization; 10 pods or 100 % a minute,
// whichever is more) and down slowly (5 minutes of stabilization, then one
// pod a minute), so that a bursty queue does not make the workload thrash.
func hpaBehavior() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 10, PeriodSeconds: 60},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 60},
			},
		},
		ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](300),
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60},
			},
		},
	}
}

// triggers are the queue's trigger, then the spec's extra ones as written.
func (in Input) triggers() []kedav1alpha1.ScaleTriggers {
	out := []kedav1alpha1.ScaleTriggers{in.trigger()}
	if adv := in.Actor.Spec.Scaling.Advanced; adv != nil {
		for _, t := range adv.Triggers {
			st := kedav1alpha1.ScaleTriggers{Type: t.Type, Name: t.Name, Metadata: t.Metadata,
				MetricType: autoscalingv2.MetricTargetType(t.MetricType), UseCachedMetrics: t.UseCachedMetrics}
			if ref := t.AuthenticationRef; ref != nil {
				st.AuthenticationRef = &kedav1alpha1.AuthenticationRef{Name: ref.Name, Kind: ref.Kind}
			}
			out = append(out, st)
		}
	}
	return out
}

// trigger is the queue-length trigger of the actor's transport kind.
func (in Input) trigger() kedav1alpha1.ScaleTriggers {
	target := strconv.Itoa(int(in.Actor.Spec.Scaling.QueueLength))
	t := kedav1alpha1.ScaleTriggers{Name: TriggerName}
	t.Type, t.Metadata = in.Transport.Trigger(in.queue(), target)
	if in.Transport.TriggerAuth() != nil {
		t.AuthenticationRef = &kedav1alpha1.AuthenticationRef{Name: TriggerAuthenticationName(in.Actor.Name)}
	}
	return t
}
