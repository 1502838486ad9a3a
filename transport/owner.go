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

// ClaimantOf is the actor as a claimant of its queue.
func ClaimantOf(a *v1alpha1.AsyncActor) Claimant {
	return Claimant{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID),
		Created: a.CreationTimestamp.Time, Terminating: a.DeletionTimestamp != nil}
}

// Rivals are the other actors among observed that claim self's queue: the
// same name on the same transport, in any namespace. Objects that are not
// actors of that name, and self, are skipped.
func Rivals(self *v1alpha1.AsyncActor, observed []*unstructured.Unstructured) []Claimant {
	var out []Claimant
	for _, obj := range observed {
		transportName, _, _ := unstructured.NestedString(obj.Object, "spec", "transport")
		if obj.GetName() != self.Name || transportName != self.Spec.Transport || sameActor(obj, self) {
			continue
		}
		out = append(out, Claimant{Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID()),
			Created: obj.GetCreationTimestamp().Time, Terminating: obj.GetDeletionTimestamp() != nil})
	}
	return out
}

func sameActor(obj *unstructured.Unstructured, self *v1alpha1.AsyncActor) bool {
	if self.UID != "" && obj.GetUID() != "" {
		return obj.GetUID() == self.UID
	}
	return obj.GetNamespace() == self.Namespace
}

// Owner picks the owner of a queue among self and its rivals, and says
// whether it is self. An actor that is not being deleted comes before one
// that is, then the oldest, then the lowest uid: the first actor to claim a
// queue keeps it for as long as it lives, and the next in line takes over
// as soon as the owner is being deleted.
func Owner(self Claimant, rivals []Claimant) (Claimant, bool) {
	owner, isSelf := self, true
	for _, r := range rivals {
		if before(r, owner) {
			owner, isSelf = r, false
		}
	}
	return owner, isSelf
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
