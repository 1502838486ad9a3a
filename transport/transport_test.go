package transport

import (
	"slices"
	"testing"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// TestEndQueuesSharedSettings: every flat actor of a namespace ensures the
// sink and sump with one set of settings, so that no two actors keep
// rewriting a shared queue.
func TestEndQueuesSharedSettings(t *testing.T) {
	got := EndQueues("ns", []string{"x-sink", "x-sump"})
	want := []Queue{{Actor: "x-sink", Namespace: "ns", ProcessingTimeout: v1alpha1.DefaultProcessing, Scoped: true},
		{Actor: "x-sump", Namespace: "ns", ProcessingTimeout: v1alpha1.DefaultProcessing, Scoped: true}}
	if !slices.Equal(got, want) {
		t.Errorf("end queues %+v, want %+v", got, want)
	}
	if got[0].Name() != "asya-ns-x-sink" || got[1].Name() != "asya-ns-x-sump" {
		t.Errorf("end queues %s, %s", got[0].Name(), got[1].Name())
	}
}
