package transport

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Nested actors' queue names are global per transport (the 0.3 sidecar
// derives the queue from the bare actor name), so actors of one name in
// several namespaces claim the same queue; flat actors of one spec.actor in
// one namespace do too. Exactly one owns it; the rule below is a pure function of
// the claimants Metacontroller sends with every hook call, so every replica
// of the service decides alike, on every call, with no state of its own.

// Claimant is an actor claiming a queue, reduced to what decides ownership.
type Claimant struct {
	Namespace, Name string
	UID             string
	Created         time.Time
	Terminating     bool
}

// String is the claimant as users name it: namespace/name.
func (c Claimant) String() string { return c.Namespace + "/" + c.Name }

// claimKey is what two actors share when they claim one queue: the
// transport and the queue's name.
type claimKey struct{ transport, queue string }

// keyOf reads the claim off a related actor as it came: a flat actor (its
// shape, as v1alpha1.ShapeOf tells it for the hook) claims
// asya-<namespace>-<actor> on its transport, or on flatTransport, the
// service's for flat actors that name none.
func keyOf(obj *unstructured.Unstructured, flatTransport string) claimKey {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	t, _, _ := unstructured.NestedString(spec, "transport")
	if gen, _ := v1alpha1.ShapeOfObject(spec); gen == v1alpha1.Flat {
		actor, _, _ := unstructured.NestedString(spec, "actor")
		if t == "" {
			t = flatTransport
		}
		return claimKey{t, v1alpha1.FlatQueueName(obj.GetNamespace(), actor)}
	}
	return claimKey{t, v1alpha1.QueueName(obj.GetName())}
}

// Owner is the ownership rule: of self and the actors Metacontroller sent
// (related objects, any namespace), it picks the owner of self's queue and
// says whether it is self. The claimants are the actors that claim self's
// queue on self's transport (keyOf). One not being deleted comes before one that is, then
// the oldest, then the lowest uid: the first actor to claim a queue keeps
// it for as long as it lives, and the next in line takes over as soon as
// the owner is being deleted. The order of actors does not matter.
func Owner(self *v1alpha1.AsyncActor, actors []*unstructured.Unstructured, flatTransport string) (owner Claimant, mine bool) {
	owner, mine = Claimant{Namespace: self.Namespace, Name: self.Name, UID: string(self.UID),
		Created: self.CreationTimestamp.Time, Terminating: self.DeletionTimestamp != nil}, true
	want := claimKey{self.Spec.Transport, QueueOf(self).Name()}
	for _, obj := range actors {
		if keyOf(obj, flatTransport) != want || sameActor(obj, self) {
			continue
		}
		rival := Claimant{Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID()),
			Created: obj.GetCreationTimestamp().Time, Terminating: obj.GetDeletionTimestamp() != nil}
		if before(rival, owner) {
			owner, mine = rival, false
		}
	}
	return owner, mine
}

func sameActor(obj *unstructured.Unstructured, self *v1alpha1.AsyncActor) bool {
	if self.UID != "" && obj.GetUID() != "" {
		return obj.GetUID() == self.UID
	}
	return obj.GetNamespace() == self.Namespace
}

func before(a, b Claimant) bool {
	switch {
	case a.Terminating != b.Terminating:
		return !a.Terminating
	case !a.Created.Equal(b.Created):
		return a.Created.Before(b.Created)
	case a.UID != b.UID:
		return a.UID < b.UID
	}
	return a.Namespace < b.Namespace
}
