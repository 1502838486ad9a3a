package children

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationRoleARN names the IAM role that pods running as a ServiceAccount
// assume on EKS (IAM Roles for Service Accounts).
const AnnotationRoleARN = "eks.amazonaws.com/role-arn"

// ServiceAccount returns the IRSA ServiceAccount when the transport gives
// the actor's pods an IAM role, else nil.
func ServiceAccount(in Input) *corev1.ServiceAccount {
	if !in.usesIRSA() {
		return nil
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: in.objectMeta(ServiceAccountName(in.Actor.Name)),
	}
	sa.Annotations = map[string]string{AnnotationRoleARN: in.Transport.PodRole()}
	return sa
}
