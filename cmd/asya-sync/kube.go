package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/children"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/actorindex"
)

// readTimeout bounds one list: a slow API server costs the sync what the
// list would have told, not its answer.
const readTimeout = 3 * time.Second

// kubeReader reads what the service reads of the API server itself, with
// its own credentials (its ServiceAccount in a cluster, else the
// kubeconfig given): an actor's pods, the actors that claim a queue, the
// Secrets a transport references. Reads are served from the API server's
// watch cache (resourceVersion 0), as Metacontroller's informers would
// have the objects, and reach no etcd.
type kubeReader struct {
	core corev1client.CoreV1Interface
	// actors lists the actors by field selector, and watches them for
	// the claimant index (actorindex).
	actors rest.Interface
}

// ListPods lists the pods labelled for the actor.
func (k kubeReader) ListPods(ctx context.Context, namespace, actor string) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	selector := labels.SelectorFromSet(labels.Set{children.LabelActor: actor}).String()
	list, err := k.core.Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("list pods %s in %s: %w", selector, namespace, err)
	}
	if list.Items == nil {
		return []corev1.Pod{}, nil
	}
	return list.Items, nil
}

// ListActors lists the AsyncActors of the field selector, in namespace
// or, when it is empty, in every namespace.
func (k kubeReader) ListActors(ctx context.Context, namespace, fieldSelector string) (hook.ActorGroup, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	data, err := k.actors.Get().Namespace(namespace).Resource(v1alpha1.Resource).
		Param("fieldSelector", fieldSelector).Param("resourceVersion", "0").Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("list asyncactors %s: %w", fieldSelector, err)
	}
	return hook.DecodeActorList(data)
}

// GetSecret gets the Secret, or nil when there is none of that name.
func (k kubeReader) GetSecret(ctx context.Context, namespace, name string) (*hook.Secret, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	s, err := k.core.Secrets(namespace).Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get secret %s in %s: %w", name, namespace, err)
	}
	return &hook.Secret{Object: hook.Object{Metadata: hook.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID}}, Data: s.Data}, nil
}

// newKubeReader is the service's reader when the configuration has it read
// pods, Secrets or namesakes, from kubeconfig if given, else the pod's
// ServiceAccount; nil when it reads none. Without credentials the
// service still serves: the statuses say what could not be read, and a
// finalize that needs the namesakes waits for them.
func newKubeReader(cfg *config.Config, kubeconfig string, log zerolog.Logger) *kubeReader {
	if !cfg.Watch.ReadsAPI() {
		return nil
	}
	r, err := dialKube(kubeconfig)
	if err != nil {
		log.Warn().Err(err).Msg("no Kubernetes API client: pod health, the referenced Secrets and the actors claiming a queue are not read")
		return nil
	}
	return r
}

func dialKube(kubeconfig string) (*kubeReader, error) {
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	actors, err := actorindex.Client(rc)
	if err != nil {
		return nil, err
	}
	return &kubeReader{core: core, actors: actors}, nil
}

// restConfig is the API client's configuration. Its rate allows a list or
// two per sync across a fleet's resyncs (client-go's default is 5 a
// second).
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
	rc.QPS, rc.Burst = 100, 200
	rc.UserAgent = "asya-sync"
	return rc, nil
}
