package transport

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

func TestOwner(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	self := Claimant{Namespace: "b", Name: "x", UID: "u-b", Created: t0}
	for _, tc := range []struct {
		name   string
		self   Claimant
		rivals []Claimant
		want   string
	}{
		{"alone", self, nil, "b/x"},
		{"older rival owns", self, []Claimant{{Namespace: "a", Name: "x", UID: "u-a", Created: t0.Add(-time.Hour)}}, "a/x"},
		{"newer rival does not", self, []Claimant{{Namespace: "c", Name: "x", UID: "u-c", Created: t0.Add(time.Second)}}, "b/x"},
		{"same second: lower uid", self, []Claimant{{Namespace: "c", Name: "x", UID: "u-a", Created: t0}}, "c/x"},
		{"an owner being deleted hands over", self, []Claimant{{Namespace: "a", Name: "x", UID: "u-a", Created: t0.Add(-time.Hour), Terminating: true}}, "b/x"},
		{"being deleted: a live rival takes over", Claimant{Namespace: "a", Name: "x", UID: "u-a", Created: t0.Add(-time.Hour), Terminating: true},
			[]Claimant{self}, "b/x"},
		{"all being deleted: the oldest", Claimant{Namespace: "a", Name: "x", UID: "u-a", Created: t0.Add(-time.Hour), Terminating: true},
			[]Claimant{{Namespace: "b", Name: "x", UID: "u-b", Created: t0, Terminating: true}}, "a/x"},
		{"oldest of many", self, []Claimant{
			{Namespace: "c", Name: "x", UID: "u-c", Created: t0.Add(-time.Minute)},
			{Namespace: "d", Name: "x", UID: "u-d", Created: t0.Add(-time.Hour)},
			{Namespace: "e", Name: "x", UID: "u-e", Created: t0.Add(-time.Second)},
		}, "d/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owner, mine := Owner(tc.self, tc.rivals)
			if owner.String() != tc.want || mine != (tc.want == tc.self.String()) {
				t.Errorf("Owner = %s (self: %v), want %s", owner, mine, tc.want)
			}
			// The verdict does not depend on the order Metacontroller lists actors in.
			reversed := make([]Claimant, len(tc.rivals))
			for i, r := range tc.rivals {
				reversed[len(tc.rivals)-1-i] = r
			}
			if again, _ := Owner(tc.self, reversed); again.String() != tc.want {
				t.Errorf("with rivals reversed, Owner = %s, want %s", again, tc.want)
			}
		})
	}
}

func TestRivals(t *testing.T) {
	self := &v1alpha1.AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "b", UID: "u-b"},
		Spec: v1alpha1.AsyncActorSpec{Transport: "mq"}}
	obj := func(ns, name, uid, transportName string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"transport": transportName}}}
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetUID(types.UID(uid))
		return u
	}
	got := Rivals(self, []*unstructured.Unstructured{
		obj("b", "x", "u-b", "mq"),  // self
		obj("a", "x", "u-a", "mq"),  // rival
		obj("c", "x", "u-c", "sqs"), // another transport: another queue
		obj("d", "y", "u-d", "mq"),  // another name
		obj("e", "x", "u-e", "mq"),  // rival
	})
	if len(got) != 2 || got[0].String() != "a/x" || got[1].String() != "e/x" {
		t.Errorf("Rivals = %v, want a/x and e/x", got)
	}
}
