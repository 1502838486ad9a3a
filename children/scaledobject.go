package children

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
)

// TriggerName names the actor's only trigger. KEDA resolves the names in a
// scalingModifiers formula against trigger names, so a formula refers to
// the queue metric as "queue".
const TriggerName = "queue"

// ScaledObject returns the actor's ScaledObject, or nil when scaling is off
// (or the cluster has no KEDA).
func ScaledObject(in Input) *kedav1alpha1.ScaledObject {
	if !in.ScalingActive() {
		return nil
	}
	trigger, ok := in.trigger()
	if !ok {
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
			Triggers:        []kedav1alpha1.ScaleTriggers{trigger},
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

// trigger is the queue-length trigger for the actor's transport; false for a
// transport of no known type.
func (in Input) trigger() (kedav1alpha1.ScaleTriggers, bool) {
	queue := v1alpha1.QueueName(in.Actor.Name)
	target := strconv.Itoa(int(in.Actor.Spec.Scaling.QueueLength))
	t := kedav1alpha1.ScaleTriggers{Name: TriggerName}
	switch {
	case in.Transport.RabbitMQ != nil:
		t.Type = "rabbitmq"
		t.Metadata = rabbitMQMetadata(in.Transport.RabbitMQ, queue, target)
	case in.Transport.SQS != nil:
		t.Type = "aws-sqs-queue"
		t.Metadata = sqsMetadata(in.Transport.SQS, queue, target)
	default:
		return t, false
	}
	if in.triggerAuthSpec() != nil {
		t.AuthenticationRef = &kedav1alpha1.AuthenticationRef{Name: TriggerAuthenticationName(in.Actor.Name)}
	}
	return t, true
}

func rabbitMQMetadata(r *config.RabbitMQ, queue, target string) map[string]string {
	m := map[string]string{
		"queueName": queue,
		"mode":      "QueueLength",
		"value":     target,
		"protocol":  "amqp",
		"host":      rabbitMQHost(r),
	}
	if r.VHost != "" && r.VHost != config.DefaultVHost {
		m["vhostName"] = r.VHost
	}
	return m
}

// rabbitMQHost is the AMQP URL KEDA connects to. With a password secret the
// credentials come from the TriggerAuthentication. Without one, the URL
// carries the configured username and no password: KEDA hands the URL to
// amqp091-go, which fills a missing password (and user) with "guest". KEDA
// then logs in as <username>/guest, which is what the sidecar does when it
// has no ASYA_RABBITMQ_PASSWORD and what asya-sync does without a
// passwordFile; for the default user that is guest/guest.
func rabbitMQHost(r *config.RabbitMQ) string {
	u := url.URL{Scheme: "amqp", Host: net.JoinHostPort(r.Host, strconv.Itoa(r.Port))}
	if r.PasswordSecretRef == nil && r.Username != "" {
		u.User = url.User(r.Username)
	}
	return u.String()
}

// sqsMetadata describes the actor's queue. Without static credentials or
// IRSA (an emulator, or KEDA running with its own AWS identity) KEDA uses
// its own credentials: identity owner "operator". The scaler's other owner,
// "pod", fails without credentials in a TriggerAuthentication.
func sqsMetadata(s *config.SQS, queue, target string) map[string]string {
	m := map[string]string{
		"queueURL":    sqsQueueURL(s, queue),
		"queueLength": target,
		"awsRegion":   s.Region,
	}
	if s.Endpoint != "" {
		m["awsEndpoint"] = strings.TrimRight(s.Endpoint, "/")
	}
	if s.Credentials == nil && s.ActorRoleArn == "" {
		m["identityOwner"] = "operator"
	}
	return m
}

// sqsQueueURL is the queue's URL on AWS, or on the configured endpoint.
func sqsQueueURL(s *config.SQS, queue string) string {
	base := "https://sqs." + s.Region + ".amazonaws.com"
	if s.Endpoint != "" {
		base = strings.TrimRight(s.Endpoint, "/")
	}
	return base + "/" + s.AccountID + "/" + queue
}
