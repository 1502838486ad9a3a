//go:build tools

// Package tools pins the binaries the end-to-end tier runs: a real API
// server and etcd, the controller manager (workload controllers and the
// garbage collector), the scheduler, the kubelet and kube-proxy of the node
// tier, the CRD generator, Helm and kubectl. It lives in its own module so that their
// dependencies never enter the service's module graph.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "helm.sh/helm/v3/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
