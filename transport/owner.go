package transport

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// Queue names are global per transport (the sidecar derives the queue from
// the bare actor name), so actors of one name in several namespaces claim
// the same queue. Exactly one owns it; the rule below is a pure function of
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

// Owner is the ownership rule: of self and the actors Metacontroller sent
// (related objects, any namespace), it picks the owner of self's queue and
// says whether it is self. The claimants are the actors of self's name on
// self's transport. One not being deleted comes before one that is, then
// the oldest, then the lowest uid: the first actor to claim a queue keeps
// it for as long as it lives, and the next in line takes over as soon as
// the owner is being deleted. The order of actors does not matter.
func Owner(self *v1alpha1.AsyncActor, actors []*unstructured.Unstructured) (owner Claimant, mine bool) {
	owner, mine = Claimant{Namespace: self.Namespace, Name: self.Name, UID: string(self.UID),
		Created: self.CreationTimestamp.Time, Terminating: self.DeletionTimestamp != nil}, true
	for _, obj := range actors {
		transportName, _, _ := unstructured.NestedString(obj.Object, "spec", "transport")
		if obj.GetName() != self.Name || transportName != self.Spec.Transport || sameActor(obj, self) {
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
