package sync

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/transport/brokers"
)

// NewBrokerHandler is a handler over the real brokers of the service
// configuration yaml, closed when the test ends. Exported for this
// package's external tests.
func NewBrokerHandler(t *testing.T, yaml string) *Handler {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	set, err := brokers.Open(cfg.Enabled(), cfg.QueueCacheTTL.Duration, brokers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return &Handler{Config: cfg, Transports: set, Script: testScript, FlatScript: testFlatScript, Actors: noOtherActors{}, Secrets: secretsExist{}, Now: time.Now}
}

// noOtherActors is an API server that holds no actor claiming the queue
// but the one synced: the cluster these tests' requests describe, unless
// they send the claimants themselves, as Metacontroller would with
// watch.namesakes true.
type noOtherActors struct{}

func (noOtherActors) ListActors(context.Context, string, string) (hook.ActorGroup, error) {
	return hook.ActorGroup{}, nil
}

// secretsExist is an API server that holds every Secret it is asked
// for, with none of the keys a transport checks: the cluster these tests'
// requests describe, unless they send the Secrets themselves, as
// Metacontroller would with watch.secrets true.
type secretsExist struct{}

func (secretsExist) GetSecret(_ context.Context, namespace, name string) (*hook.Secret, error) {
	return &hook.Secret{Object: hook.Object{Metadata: hook.ObjectMeta{Name: name, Namespace: namespace}}}, nil
}

// DecodeBody is the request Metacontroller would send as body, decoded as
// the HTTP layer decodes it. Exported for this package's external tests.
func DecodeBody(t *testing.T, body map[string]any) *hook.SyncRequest {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := hook.DecodeSyncRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// conditionIn is the answer's status condition of that type, or an empty one.
func conditionIn(resp *hook.Response, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(resp.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}
