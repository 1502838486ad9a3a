package sync

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
)

// ActorLister lists AsyncActors by a field selector, in namespace, or in
// every namespace when it is empty, for watch.namesakes read: from the
// service's index of the actors (internal/actorindex), else the API
// server.
type ActorLister interface {
	ListActors(ctx context.Context, namespace, fieldSelector string) (hook.ActorGroup, error)
}

// errNoAPIClient: the service was started without credentials for the
// API server, and reads nothing there.
var errNoAPIClient = errors.New("asya-sync has no Kubernetes API client")

// claimSelector says where the actors that claim the actor's queue are,
// and the field selector that returns them alone: a nested actor's
// namesakes in every namespace, a flat actor's twins (its spec.actor, a
// selectable field of the CRD) in its namespace.
func claimSelector(actor *v1alpha1.AsyncActor) (namespace, selector string) {
	name, scoped := actor.QueueActor()
	if scoped {
		return actor.Namespace, fields.OneTermEqualSelector("spec.actor", name).String()
	}
	return "", fields.OneTermEqualSelector("metadata.name", name).String()
}

// readClaimants gives the request the actors that claim the actor's
// queue, as the namesakes rule would have Metacontroller send them, when
// the service reads them itself: those an owner's earlier sync read
// (ClaimantsCache), else a list, which it returns so that the caller can
// keep it once it knows who owns the queue. Actors Metacontroller sent (a
// customize answer it still keeps from watch.namesakes true) are used as
// they are. The error says why they could not be read.
func (h *Handler) readClaimants(ctx context.Context, req *hook.SyncRequest) (listed hook.ActorGroup, err error) {
	if h.Config.Watch.Namesakes != config.Read || req.Related.AsyncActors != nil || !namesQueue(req.Actor) {
		return nil, nil
	}
	if kept, ok := h.Claimants.get(claimantsKeyOf(req), h.Now()); ok && !req.Finalizing {
		req.Related.AsyncActors = kept
		return nil, nil
	}
	if h.Actors == nil {
		return nil, errNoAPIClient
	}
	namespace, selector := claimSelector(req.Actor)
	listed, err = h.Actors.ListActors(ctx, namespace, selector)
	if err != nil {
		return nil, err
	}
	req.Related.AsyncActors = listed
	return listed, nil
}

func claimantsKeyOf(req *hook.SyncRequest) claimantsKey {
	return claimantsKey{uid: req.Actor.UID, generation: req.Actor.Generation}
}
