package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	hooksync "github.com/asya-sh/asya-sync/sync"
)

// podListTimeout bounds one pod list: a slow API server costs the sync
// its pod-level health, not its answer.
const podListTimeout = 3 * time.Second

// podLister lists an actor's pods with the service's own credentials:
// its ServiceAccount in a cluster, else the kubeconfig given.
type podLister struct{ pods corev1client.PodsGetter }

// ListPods lists the pods labelled for the actor, from the API server's
// watch cache (resourceVersion 0): the status is read off them as
// Metacontroller's cache would have them, and etcd is not asked.
func (l podLister) ListPods(ctx context.Context, namespace, actor string) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, podListTimeout)
	defer cancel()
	selector := labels.SelectorFromSet(labels.Set{children.LabelActor: actor}).String()
	list, err := l.pods.Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("list pods %s in %s: %w", selector, namespace, err)
	}
	if list.Items == nil {
		return []corev1.Pod{}, nil
	}
	return list.Items, nil
}

// newPodLister is the service's pod lister when watch.pods is
// whileUnhealthy, from kubeconfig if given, else the pod's ServiceAccount.
// Without either the service still serves: the status of an actor whose
// workload is not settled says that its pods could not be read.
func newPodLister(cfg *config.Config, kubeconfig string, log zerolog.Logger) hooksync.PodLister {
	if cfg.Watch.Pods != config.PodsWhileUnhealthy {
		return nil
	}
	rc, err := restConfig(kubeconfig)
	if err == nil {
		var client *corev1client.CoreV1Client
		if client, err = corev1client.NewForConfig(rc); err == nil {
			return podLister{client}
		}
	}
	log.Warn().Err(err).Msg("watch.pods whileUnhealthy: no Kubernetes API client, pod health is not read")
	return nil
}

// restConfig is the API client's configuration. Its rate allows a burst
// of pod lists as a fleet rolls out (client-go's default is 5 a second).
func restConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else if rc, err = rest.InClusterConfig(); errors.Is(err, rest.ErrNotInCluster) {
		err = errors.New("not in a cluster and no --kubeconfig")
	}
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = "asya-sync"
	return rc, nil
}
