package children

import (
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
)

// KEDA authentication parameters, as the rabbitmq and aws-sqs-queue scalers
// name them.
const (
	authUsername           = "username"
	authPassword           = "password"
	authAWSAccessKeyID     = "awsAccessKeyID"
	authAWSSecretAccessKey = "awsSecretAccessKey"
)

// rabbitMQUsernameEnv is the sidecar variable that holds the configured
// RabbitMQ username; KEDA reads the username from it.
const rabbitMQUsernameEnv = "ASYA_RABBITMQ_USERNAME"

// TriggerAuthentication returns the actor's TriggerAuthentication when its
// trigger needs credentials that trigger metadata cannot carry, else nil.
func TriggerAuthentication(in Input) *kedav1alpha1.TriggerAuthentication {
	if !in.ScalingActive() {
		return nil
	}
	spec := in.triggerAuthSpec()
	if spec == nil {
		return nil
	}
	return &kedav1alpha1.TriggerAuthentication{
		TypeMeta:   kedaTypeMeta("TriggerAuthentication"),
		ObjectMeta: in.objectMeta(TriggerAuthenticationName(in.Actor.Name)),
		Spec:       *spec,
	}
}

// triggerAuthSpec is what KEDA needs to authenticate against the actor's
// transport, or nil when the trigger metadata alone is enough.
func (in Input) triggerAuthSpec() *kedav1alpha1.TriggerAuthenticationSpec {
	switch {
	case in.Transport.RabbitMQ != nil:
		return rabbitMQAuth(in.Transport.RabbitMQ)
	case in.Transport.SQS != nil:
		return sqsAuth(in.Transport.SQS)
	}
	return nil
}

// rabbitMQAuth gives KEDA the password from the configured secret and the
// username from the sidecar's environment, so that KEDA always logs in as
// the sidecar does and no secret key for the username has to be guessed.
// KEDA rejects a username without a password, so without a password secret
// there is nothing to give (see rabbitMQHost).
func rabbitMQAuth(r *config.RabbitMQ) *kedav1alpha1.TriggerAuthenticationSpec {
	if r.PasswordSecretRef == nil {
		return nil
	}
	return &kedav1alpha1.TriggerAuthenticationSpec{
		SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{secretTarget(authPassword, *r.PasswordSecretRef)},
		Env: []kedav1alpha1.AuthEnvironment{{
			Parameter:     authUsername,
			Name:          rabbitMQUsernameEnv,
			ContainerName: v1alpha1.SidecarContainer,
		}},
	}
}

// sqsAuth gives KEDA the static credentials when configured. With IRSA, KEDA
// assumes the role annotated on the workload's ServiceAccount (identity
// owner "workload"): KEDA's aws-sqs-queue scaler has no way to use the
// actor's role from trigger metadata alone.
func sqsAuth(s *config.SQS) *kedav1alpha1.TriggerAuthenticationSpec {
	switch {
	case s.Credentials != nil:
		return &kedav1alpha1.TriggerAuthenticationSpec{
			SecretTargetRef: []kedav1alpha1.AuthSecretTargetRef{
				secretTarget(authAWSAccessKeyID, *s.Credentials.AccessKeyIDSecretRef),
				secretTarget(authAWSSecretAccessKey, *s.Credentials.SecretAccessKeySecretRef),
			},
		}
	case s.ActorRoleArn != "":
		return &kedav1alpha1.TriggerAuthenticationSpec{
			PodIdentity: &kedav1alpha1.AuthPodIdentity{
				Provider:      kedav1alpha1.PodIdentityProviderAws,
				IdentityOwner: ptr.To("workload"),
			},
		}
	}
	return nil
}

func secretTarget(parameter string, ref config.SecretKeyRef) kedav1alpha1.AuthSecretTargetRef {
	return kedav1alpha1.AuthSecretTargetRef{Parameter: parameter, Name: ref.Name, Key: ref.Key}
}
