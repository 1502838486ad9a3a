package sqs

import (
	"strconv"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/transport"
)

// KEDA authentication parameters, as the aws-sqs-queue scaler names them.
const (
	authAccessKeyID     = "awsAccessKeyID"
	authSecretAccessKey = "awsSecretAccessKey"
)

// The sidecar's variables holding static credentials, which KEDA reads too.
const (
	accessKeyIDEnv     = "AWS_ACCESS_KEY_ID"
	secretAccessKeyEnv = "AWS_SECRET_ACCESS_KEY"
)

// SidecarEnv implements transport.Kind.
func (s *Settings) SidecarEnv(q transport.Queue) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "ASYA_AWS_REGION", Value: s.Region}}
	if s.Endpoint != "" {
		env = append(env, corev1.EnvVar{Name: "ASYA_SQS_ENDPOINT", Value: s.Endpoint})
	}
	env = append(env,
		corev1.EnvVar{Name: "ASYA_SQS_VISIBILITY_TIMEOUT", Value: strconv.Itoa(int(s.VisibilityTimeoutFor(q.ProcessingTimeout)))},
		corev1.EnvVar{Name: "ASYA_SQS_WAIT_TIME_SECONDS", Value: strconv.Itoa(int(*s.WaitTimeSeconds))},
	)
	if c := s.Credentials; c != nil {
		env = append(env,
			c.AccessKeyIDSecretRef.Env(accessKeyIDEnv),
			c.SecretAccessKeySecretRef.Env(secretAccessKeyEnv))
	}
	return env
}

// Trigger implements transport.Kind with KEDA's aws-sqs-queue scaler.
// Without static credentials or IRSA (an emulator, or KEDA running with
// its own AWS identity) KEDA uses its own credentials: identity owner
// "operator". The scaler's other owner, "pod", fails without credentials
// in a TriggerAuthentication.
func (s *Settings) Trigger(q transport.Queue, target string) (string, map[string]string) {
	m := map[string]string{
		"queueURL":    s.QueueURL(q.Name()),
		"queueLength": target,
		"awsRegion":   s.Region,
	}
	if s.Endpoint != "" {
		m["awsEndpoint"] = strings.TrimRight(s.Endpoint, "/")
	}
	if s.Credentials == nil && s.ActorRoleArn == "" {
		m["identityOwner"] = "operator"
	}
	return "aws-sqs-queue", m
}

// QueueURL is the queue's URL on AWS, or on the configured endpoint.
func (s *Settings) QueueURL(queue string) string {
	base := "https://sqs." + s.Region + ".amazonaws.com"
	if s.Endpoint != "" {
		base = strings.TrimRight(s.Endpoint, "/")
	}
	return base + "/" + s.AccountID + "/" + queue
}

// QueueIdentifier is the queue's ARN, as upstream's status gives it. It is
// made from the configured region and account, as the queue's URL is, not
// asked of SQS: on an emulator endpoint it is the ARN AWS would give the
// queue there, which is what an emulator reports when it runs in the
// configured region and account (LocalStack's defaults, us-east-1 and
// 000000000000, for example).
func (s *Settings) QueueIdentifier(queue string) string {
	return "arn:" + partition(s.Region) + ":sqs:" + s.Region + ":" + s.AccountID + ":" + queue
}

// partition is the AWS partition of a region: its ARNs say aws-cn in
// China and aws-us-gov in GovCloud.
func partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// TriggerAuth implements transport.Kind: the static credentials when
// configured, read from the sidecar's environment, so that KEDA uses what
// the sidecar uses. Not as secretTargetRef entries: those are keyed by the
// Secret's name under Metacontroller's apply, and two keys of one Secret
// would collapse into one (internal/dynamicapply). With IRSA, KEDA assumes the role annotated on the workload's
// ServiceAccount (identity owner "workload"): KEDA's aws-sqs-queue scaler
// has no way to use the actor's role from trigger metadata alone.
func (s *Settings) TriggerAuth() *kedav1alpha1.TriggerAuthenticationSpec {
	switch {
	case s.Credentials != nil:
		return &kedav1alpha1.TriggerAuthenticationSpec{
			Env: []kedav1alpha1.AuthEnvironment{
				{Parameter: authAccessKeyID, Name: accessKeyIDEnv, ContainerName: v1alpha1.SidecarContainer},
				{Parameter: authSecretAccessKey, Name: secretAccessKeyEnv, ContainerName: v1alpha1.SidecarContainer},
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
