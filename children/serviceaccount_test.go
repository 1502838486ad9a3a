package children

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/transport/sqs"
)

func TestServiceAccount(t *testing.T) {
	irsa := &corev1.ServiceAccount{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        "asya-echo",
			Namespace:   "ml",
			Labels:      Labels("echo"),
			Annotations: map[string]string{"eks.amazonaws.com/role-arn": actorRole},
		},
	}
	withRole := func(s *sqs.Settings) { s.ActorRoleArn = actorRole }
	scalingOff := func(s *v1alpha1.AsyncActorSpec) { s.Scaling.Enabled = ptr.To(false) }

	tests := []struct {
		name string
		in   Input
		want *corev1.ServiceAccount
	}{
		{"sqs with actorRoleArn", scalingInput(sqsTransport(withRole), nil), irsa},
		{"sqs with actorRoleArn, scaling off", scalingInput(sqsTransport(withRole), scalingOff), irsa},
		{"sqs without actorRoleArn", scalingInput(sqsTransport(staticCredentials), nil), nil},
		{"rabbitmq", scalingInput(rabbitMQTransport(nil), nil), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ServiceAccount(tc.in)); diff != "" {
				t.Errorf("ServiceAccount (-want +got):\n%s", diff)
			}
		})
	}
}
