package sync

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/config"
)

// PodLister lists an actor's pods (label asya.sh/asya: the actor's name)
// from the API server, for watch.pods whileUnhealthy.
type PodLister interface {
	ListPods(ctx context.Context, namespace, actor string) ([]corev1.Pod, error)
}

// readPods lists the actor's pods when the service reads them itself and
// the observed workload is not settled. Pods Metacontroller sent (a
// customize answer it still keeps from watch.pods true) are used as they
// are. A settled workload's pods are not read: its counts say all they
// would. A list that fails leaves the status to the counts and says why.
func (h *Handler) readPods(ctx context.Context, a *assessment) {
	if h.Config.Watch.Pods != config.PodsWhileUnhealthy || a.req.Related.Pods != nil || a.req.Finalizing {
		return
	}
	if w := a.observedWorkload(); w == nil || w.Settled() {
		return
	}
	if h.Pods == nil {
		a.unwatched.PodsUnread = errNoAPIClient.Error()
		return
	}
	pods, err := h.Pods.ListPods(ctx, a.actor.Namespace, a.actor.Name)
	if err != nil {
		a.unwatched.PodsUnread = err.Error()
		return
	}
	a.podsRead = pods
}
