package sync

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
)

// TestEndQueuesSharedSettings: every flat actor of a namespace ensures the
// sink and sump with one set of settings, whatever its own timeout, so
// that no two actors keep rewriting a shared queue.
func TestEndQueuesSharedSettings(t *testing.T) {
	h := &Handler{Config: &config.Config{FlatActors: config.FlatActors{Sink: "x-sink", Sump: "x-sump"}}}
	flat := func(actor string, processing int32) *v1alpha1.AsyncActor {
		return &v1alpha1.AsyncActor{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: actor},
			Spec: v1alpha1.AsyncActorSpec{AsyaGeneration: v1alpha1.Flat, CurrentSpec: v1alpha1.CurrentSpec{Actor: actor},
				Timeout: v1alpha1.TimeoutSpec{Processing: processing}}}
	}
	fast, slow := h.endQueues(flat("fast", 10)), h.endQueues(flat("slow", 900))
	if len(fast) != 2 || !slices.Equal(fast, slow) {
		t.Errorf("end queues differ by actor: %+v and %+v", fast, slow)
	}
	if fast[0].Name() != "asya-ns-x-sink" || fast[1].Name() != "asya-ns-x-sump" {
		t.Errorf("end queues %s, %s", fast[0].Name(), fast[1].Name())
	}
	if got := h.endQueues(&v1alpha1.AsyncActor{}); len(got) != 0 {
		t.Errorf("a nested actor's end queues: %+v, want none", got)
	}
}
