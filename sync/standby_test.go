package sync

import (
	"testing"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/transport"
)

// TestStandBy: which of the broker's answers make an actor stand by, and
// for which queue (the golden cases flat-queue-held* show the rest).
func TestStandBy(t *testing.T) {
	actor := &v1alpha1.AsyncActor{}
	actor.Namespace, actor.Name = "x-b", "doubler"
	actor.Spec.AsyaGeneration, actor.Spec.Actor, actor.Spec.Transport = v1alpha1.Flat, "doubler", "mq"
	own := &transport.Held{Queue: "asya-x-b-doubler", Holder: "x/b-doubler"}
	sink := &transport.Held{Queue: "asya-x-b-x-sink", Holder: "x/b-x-sink"}
	down := &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: "down"}
	for _, tc := range []struct {
		name string
		held []*transport.Held
		err  *transport.Error
		want *transport.Held // nil: the actor does not stand by
	}{
		{"every queue its own", nil, nil, nil},
		{"the namespace's sink held", []*transport.Held{sink}, nil, sink},
		{"its own queue held, and the sink: its own is named", []*transport.Held{sink, own}, nil, own},
		{"the same, the other way round", []*transport.Held{own, sink}, nil, own},
		{"the broker down, nothing held before", nil, down, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &assessment{actor: actor, req: &hook.SyncRequest{Actor: actor}}
			state, standing := a.standBy(tc.held, tc.err)
			if standing != (tc.want != nil) || a.standby != standing || a.held != tc.want {
				t.Fatalf("standBy = %v (standby %v, held %v), want held %v", standing, a.standby, a.held, tc.want)
			}
			if standing && state.Reason != transport.ReasonQueueConflict {
				t.Errorf("reason %s, want QueueConflict", state.Reason)
			}
		})
	}
}
