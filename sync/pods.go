package sync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/asya-sh/asya-sync/config"
)

// PodLister lists an actor's pods (label asya.sh/asya: the actor's name)
// from the API server, for watch.pods whileUnhealthy.
type PodLister interface {
	ListPods(ctx context.Context, namespace, actor string) ([]corev1.Pod, error)
}

// podsReread is how soon a sync that listed the pods of a workload that is
// not settled asks to look again: no pod event will bring the next call,
// and a pod that goes on to crash or to wait for an image changes none of
// the workload's counts.
const podsReread = 15 * time.Second

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
	a.podsRead, a.podsReread = pods, podsReread
}
