package sync

import (
	"context"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/config"
)

// SecretGetter gets a Secret from the API server, for watch.secrets read:
// nil, and no error, when there is none of that name.
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*hook.Secret, error)
}

// readSecrets gives the request the Secrets the actor's transport
// references, as the Secrets rule would have Metacontroller send them,
// when the service reads them itself. Secrets Metacontroller sent (a
// customize answer it still keeps from watch.secrets true) are used as
// they are; a finalize checks none. The error says why they could not be
// read, and the request is then left without them: nothing is reported
// missing that was not looked at.
func (h *Handler) readSecrets(ctx context.Context, req *hook.SyncRequest) error {
	if h.Config.Watch.Secrets != config.Read || req.Related.Secrets != nil || req.Finalizing {
		return nil
	}
	h.serviceDefaults(req.Actor)
	names := h.secretNames(req.Actor.Spec.Transport)
	if len(names) == 0 {
		return nil
	}
	if h.Secrets == nil {
		return errNoAPIClient
	}
	found := hook.Group[hook.Secret]{}
	for _, name := range names {
		secret, err := h.Secrets.GetSecret(ctx, req.Actor.Namespace, name)
		if err != nil {
			return err
		}
		if secret != nil {
			found[req.Actor.Namespace+"/"+name] = secret
		}
	}
	req.Related.Secrets = found
	return nil
}
