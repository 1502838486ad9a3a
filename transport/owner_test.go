package transport

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

func TestOwner(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// actor is an AsyncActor named x on transport mq unless said otherwise.
	type actor struct {
		ns, uid   string
		created   time.Duration // after t0
		deleting  bool
		name, via string
		// flat is spec.actor of a flat actor; its transport, when via is
		// empty, is the service's for flat actors ("mq" here), as the sync
		// defaults it.
		flat string
		// noActor is a flat spec without spec.actor.
		noActor bool
	}
	typed := func(a actor) *v1alpha1.AsyncActor {
		out := &v1alpha1.AsyncActor{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "x", UID: types.UID(a.uid),
			CreationTimestamp: metav1.NewTime(t0.Add(a.created))}, Spec: v1alpha1.AsyncActorSpec{Transport: "mq"}}
		if a.name != "" {
			out.Name = a.name
		}
		if a.via != "" {
			out.Spec.Transport = a.via
		}
		if a.deleting {
			out.DeletionTimestamp = &out.CreationTimestamp
		}
		if a.flat != "" || a.noActor {
			out.Spec.AsyaGeneration, out.Spec.Actor = v1alpha1.Flat, a.flat
		}
		return out
	}
	self := actor{ns: "b", uid: "u-b"}
	for _, tc := range []struct {
		name   string
		self   actor
		others []actor
		want   string
	}{
		{"alone", self, nil, "b/x"},
		{"self among the related actors, as Metacontroller sends it", self, []actor{self}, "b/x"},
		{"older actor owns", self, []actor{{ns: "a", uid: "u-a", created: -time.Hour}}, "a/x"},
		{"newer actor does not", self, []actor{{ns: "c", uid: "u-c", created: time.Second}}, "b/x"},
		{"same second: lower uid", self, []actor{{ns: "c", uid: "u-a"}}, "c/x"},
		{"an owner being deleted hands over", self, []actor{{ns: "a", uid: "u-a", created: -time.Hour, deleting: true}}, "b/x"},
		{"being deleted: a live actor takes over", actor{ns: "a", uid: "u-a", created: -time.Hour, deleting: true}, []actor{self}, "b/x"},
		{"all being deleted: the oldest", actor{ns: "a", uid: "u-a", created: -time.Hour, deleting: true},
			[]actor{{ns: "b", uid: "u-b", deleting: true}}, "a/x"},
		{"oldest of many", self, []actor{{ns: "c", uid: "u-c", created: -time.Minute}, {ns: "d", uid: "u-d", created: -time.Hour},
			{ns: "e", uid: "u-e", created: -time.Second}}, "d/x"},
		{"another transport is another queue", self, []actor{{ns: "a", uid: "u-a", created: -time.Hour, via: "sqs"}}, "b/x"},
		{"another name is another queue", self, []actor{{ns: "a", uid: "u-a", created: -time.Hour, name: "y"}}, "b/x"},
		{"flat: one spec.actor in one namespace is one queue", actor{ns: "b", uid: "u-b", name: "second", flat: "f"},
			[]actor{{ns: "b", uid: "u-a", created: -time.Hour, name: "first", flat: "f"}}, "b/first"},
		{"flat: the service's transport for flat actors counts as named", actor{ns: "b", uid: "u-b", name: "second", flat: "f"},
			[]actor{{ns: "b", uid: "u-a", created: -time.Hour, name: "first", flat: "f", via: "mq"}}, "b/first"},
		{"flat: another namespace is another queue", actor{ns: "b", uid: "u-b", flat: "f"},
			[]actor{{ns: "a", uid: "u-a", created: -time.Hour, flat: "f"}}, "b/x"},
		{"flat: a nested actor of the same name claims another queue", actor{ns: "b", uid: "u-b", flat: "x"},
			[]actor{{ns: "a", uid: "u-a", created: -time.Hour, name: "x"}}, "b/x"},
		// asya-b-f is both; the broker's record decides between claims.
		{"flat: a nested actor of the same queue is another claim", actor{ns: "b", uid: "u-b", flat: "f"},
			[]actor{{ns: "b", uid: "u-a", created: -time.Hour, name: "b-f"}}, "b/x"},
		{"flat: a spec without spec.actor claims no queue", actor{ns: "b", uid: "u-b", noActor: true},
			[]actor{{ns: "b", uid: "u-a", created: -time.Hour, name: "first", noActor: true}}, "b/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var others []*v1alpha1.AsyncActor
			for _, o := range tc.others {
				others = append(others, typed(o))
			}
			me := typed(tc.self)
			owner, mine := Owner(me, others)
			if owner.String() != tc.want || mine != (tc.want == me.Namespace+"/"+me.Name) {
				t.Errorf("Owner = %s (mine: %v), want %s", owner, mine, tc.want)
			}
			// The verdict does not depend on the order Metacontroller lists actors in.
			slices.Reverse(others)
			if again, _ := Owner(me, others); again.String() != tc.want {
				t.Errorf("with the actors reversed, Owner = %s, want %s", again, tc.want)
			}
		})
	}
}

func TestClaims(t *testing.T) {
	for _, tc := range []struct {
		q                Queue
		claim, described string
	}{
		{Queue{Actor: "echo", Namespace: "team-a"}, "echo", "the Asya 0.3 actors named echo"},
		{Queue{Actor: "doubler", Namespace: "x-b", Scoped: true}, "x-b/doubler", "actor doubler of namespace x-b"},
		{Queue{Actor: "b-doubler", Namespace: "x", Scoped: true}, "x/b-doubler", "actor b-doubler of namespace x"},
		{Queue{Actor: "x-sink", Namespace: "x-b", Scoped: true}, "x-b/x-sink", "actor x-sink of namespace x-b"},
	} {
		if got := tc.q.Claim(); got != tc.claim {
			t.Errorf("%+v: Claim = %q, want %q", tc.q, got, tc.claim)
		}
		if got := DescribeClaim(tc.q.Claim()); got != tc.described {
			t.Errorf("DescribeClaim(%q) = %q, want %q", tc.q.Claim(), got, tc.described)
		}
	}
	if got := DescribeClaim(""); got != "a claim asya-sync cannot read" {
		t.Errorf("DescribeClaim of none = %q", got)
	}
}
