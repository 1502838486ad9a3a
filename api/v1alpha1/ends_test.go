package v1alpha1

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEnds(t *testing.T) {
	nested := func(name string) *AsyncActor {
		return &AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	flat := func(actor string) *AsyncActor {
		return &AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: "object-" + actor},
			Spec: AsyncActorSpec{AsyaGeneration: Flat, CurrentSpec: CurrentSpec{Actor: actor}}}
	}
	defaults, renamed := Ends{Sink: "x-sink", Sump: "x-sump"}, Ends{Sink: "my-sink", Sump: "my-sump"}
	cases := []struct {
		name          string
		ends          Ends
		actor         *AsyncActor
		endsRoutes    bool
		shares        bool
		ensuresQueues []string
	}{
		{"nested happy-end", defaults, nested(HappyEnd), true, false, nil},
		{"nested error-end", defaults, nested(ErrorEnd), true, false, nil},
		{"nested actor named like the sink", defaults, nested("x-sink"), false, false, nil},
		{"flat worker", defaults, flat("doubler"), false, false, []string{"x-sink", "x-sump"}},
		{"flat sink", defaults, flat("x-sink"), true, true, []string{"x-sump"}},
		{"flat sump", defaults, flat("x-sump"), true, true, []string{"x-sink"}},
		{"flat happy-end, a system actor upstream", defaults, flat(HappyEnd), true, false, []string{"x-sink", "x-sump"}},
		{"renamed sink", renamed, flat("my-sink"), true, true, []string{"my-sump"}},
		{"x-sink where the sink is renamed", renamed, flat("x-sink"), false, false, []string{"my-sink", "my-sump"}},
		{"flat actor whose object is named happy-end", defaults, &AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: HappyEnd},
			Spec: AsyncActorSpec{AsyaGeneration: Flat, CurrentSpec: CurrentSpec{Actor: "doubler"}}}, false, false, []string{"x-sink", "x-sump"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ends.EndsRoutes(tc.actor); got != tc.endsRoutes {
				t.Errorf("EndsRoutes = %v, want %v", got, tc.endsRoutes)
			}
			if got := tc.ends.Shares(tc.actor); got != tc.shares {
				t.Errorf("Shares = %v, want %v", got, tc.shares)
			}
			if got := tc.ends.QueuesOf(tc.actor); !slices.Equal(got, tc.ensuresQueues) {
				t.Errorf("QueuesOf = %v, want %v", got, tc.ensuresQueues)
			}
		})
	}
}
