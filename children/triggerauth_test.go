package children

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
	"github.com/asya-sh/asya-sync/transport/sqs"
)

func TestTriggerAuthentication(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "echo-trigger-auth", Namespace: "ml", Labels: Labels("echo")}
	typeMeta := metav1.TypeMeta{APIVersion: "keda.sh/v1alpha1", Kind: "TriggerAuthentication"}
	// Read from the sidecar's env, which takes them from the Secret: two
	// secretTargetRef entries naming one Secret would collapse into one
	// under Metacontroller's apply.
	staticKeys := []kedav1alpha1.AuthEnvironment{
		{Parameter: "awsAccessKeyID", Name: "AWS_ACCESS_KEY_ID", ContainerName: "asya-sidecar"},
		{Parameter: "awsSecretAccessKey", Name: "AWS_SECRET_ACCESS_KEY", ContainerName: "asya-sidecar"},
	}
	noKEDA := scalingInput(rabbitMQTransport(nil), nil)
	noKEDA.Decided.ScalingActive = false

	tests := []struct {
		name string
		in   Input
		want *kedav1alpha1.TriggerAuthentication
	}{
		{
			name: "rabbitmq password from the secret, username from the sidecar",
			in:   scalingInput(rabbitMQTransport(nil), nil),
			want: &kedav1alpha1.TriggerAuthentication{TypeMeta: typeMeta, ObjectMeta: meta, Spec: kedav1alpha1.TriggerAuthenticationSpec{
				SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{{Parameter: "password", Name: "rabbitmq-secret", Key: "password"}},
				Env:             []kedav1alpha1.AuthEnvironment{{Parameter: "username", Name: "ASYA_RABBITMQ_USERNAME", ContainerName: "asya-sidecar"}},
			}},
		},
		{
			name: "rabbitmq without a password secret",
			in:   scalingInput(rabbitMQTransport(func(r *rabbitmq.Settings) { r.PasswordSecretRef = nil }), nil),
		},
		{
			name: "sqs static credentials",
			in:   scalingInput(sqsTransport(staticCredentials), nil),
			want: &kedav1alpha1.TriggerAuthentication{TypeMeta: typeMeta, ObjectMeta: meta, Spec: kedav1alpha1.TriggerAuthenticationSpec{
				Env: staticKeys,
			}},
		},
		{
			name: "sqs irsa: KEDA assumes the workload's role",
			in:   scalingInput(sqsTransport(func(s *sqs.Settings) { s.ActorRoleArn = actorRole }), nil),
			want: &kedav1alpha1.TriggerAuthentication{TypeMeta: typeMeta, ObjectMeta: meta, Spec: kedav1alpha1.TriggerAuthenticationSpec{
				PodIdentity: &kedav1alpha1.AuthPodIdentity{Provider: "aws", IdentityOwner: ptr.To("workload")},
			}},
		},
		{
			name: "sqs static credentials win over irsa, as in the sidecar",
			in: scalingInput(sqsTransport(func(s *sqs.Settings) {
				s.ActorRoleArn = actorRole
				staticCredentials(s)
			}), nil),
			want: &kedav1alpha1.TriggerAuthentication{TypeMeta: typeMeta, ObjectMeta: meta, Spec: kedav1alpha1.TriggerAuthenticationSpec{
				Env: staticKeys,
			}},
		},
		{
			name: "sqs without credentials or role",
			in:   scalingInput(sqsTransport(func(s *sqs.Settings) { s.Endpoint = "http://localstack:4566" }), nil),
		},
		{
			name: "pubsub key: KEDA reads it from the Secret, the sidecar from a file",
			in:   scalingInput(pubsubTransport(pubsubKey), nil),
			want: &kedav1alpha1.TriggerAuthentication{TypeMeta: typeMeta, ObjectMeta: meta, Spec: kedav1alpha1.TriggerAuthenticationSpec{
				SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{{Parameter: "GoogleApplicationCredentials", Name: "gcp-pubsub", Key: "credentials.json"}},
			}},
		},
		{
			name: "pubsub without a key: KEDA's own Google identity",
			in:   scalingInput(pubsubTransport(nil), nil),
			want: &kedav1alpha1.TriggerAuthentication{TypeMeta: typeMeta, ObjectMeta: meta, Spec: kedav1alpha1.TriggerAuthenticationSpec{
				PodIdentity: &kedav1alpha1.AuthPodIdentity{Provider: "gcp"},
			}},
		},
		{
			name: "scaling off",
			in:   scalingInput(rabbitMQTransport(nil), func(s *v1alpha1.AsyncActorSpec) { s.Scaling.Enabled = ptr.To(false) }),
		},
		{
			name: "no KEDA",
			in:   noKEDA,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, TriggerAuthentication(tc.in)); diff != "" {
				t.Errorf("TriggerAuthentication (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScalingTriggerUsesTriggerAuthentication checks that the trigger refers
// to the TriggerAuthentication exactly when there is one.
func TestScalingTriggerUsesTriggerAuthentication(t *testing.T) {
	for _, tc := range scalingCases {
		ta, so := TriggerAuthentication(tc.in), ScaledObject(tc.in)
		ref := so.Spec.Triggers[0].AuthenticationRef
		switch {
		case ta == nil && ref != nil:
			t.Errorf("%s: trigger refers to %q, but there is no TriggerAuthentication", tc.name, ref.Name)
		case ta != nil && (ref == nil || ref.Name != ta.Name || ref.Kind != ""):
			t.Errorf("%s: trigger refers to %+v, want TriggerAuthentication %q", tc.name, ref, ta.Name)
		}
	}
}

// TestScalingTriggerAuthenticationMatchesWorkload checks what KEDA reads
// from the workload: the sidecar's username variable, and for IRSA the
// ServiceAccount whose role it assumes.
func TestScalingTriggerAuthenticationMatchesWorkload(t *testing.T) {
	t.Run("rabbitmq username", func(t *testing.T) {
		in := withRuntimeContainer(scalingInput(rabbitMQTransport(nil), nil))
		env := TriggerAuthentication(in).Spec.Env[0]
		got := containerEnv(t, podSpecOf(t, Workload(in, PodsOf(in))), env.ContainerName, env.Name)
		if got != in.Transport.(*rabbitmq.Settings).Username {
			t.Errorf("%s/%s = %q, want the configured username %q", env.ContainerName, env.Name, got, in.Transport.(*rabbitmq.Settings).Username)
		}
	})
	t.Run("irsa service account", func(t *testing.T) {
		in := withRuntimeContainer(scalingInput(sqsTransport(func(s *sqs.Settings) { s.ActorRoleArn = actorRole }), nil))
		if got, want := podSpecOf(t, Workload(in, PodsOf(in))).ServiceAccountName, ServiceAccount(in).Name; got != want {
			t.Errorf("pods run as %q, want the annotated ServiceAccount %q", got, want)
		}
	})
}

func withRuntimeContainer(in Input) Input {
	in.Actor.Spec.Workload.Template.Spec.Containers = []corev1.Container{{Name: v1alpha1.RuntimeContainer, Image: "python:3.12"}}
	return in
}

func podSpecOf(t *testing.T, obj Object) corev1.PodSpec {
	t.Helper()
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Spec.Template.Spec
	case *appsv1.StatefulSet:
		return w.Spec.Template.Spec
	}
	t.Fatalf("workload is a %T", obj)
	return corev1.PodSpec{}
}

func containerEnv(t *testing.T, spec corev1.PodSpec, container, name string) string {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
		t.Fatalf("container %s has no env %s", container, name)
	}
	t.Fatalf("no container %s", container)
	return ""
}
