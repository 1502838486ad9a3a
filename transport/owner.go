package transport

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
)

// One queue, one owner (docs/design.md#queues), decided in two places:
//
//   - Among the actors of one claim (Queue.Claim: nested actors of one
//     name in any namespace, flat actors of one spec.actor in one
//     namespace), whose messages are one and the same: Owner below, a
//     pure function of the claimants Metacontroller sends with every hook
//     call, so every replica of the service decides alike, with no state
//     of its own.
//   - Between claims that happen to name one queue (namespace X's actor
//     b-doubler and namespace X-b's doubler both name asya-X-b-doubler):
//     the broker, which records the claim of the first to declare the
//     queue (Broker.Ensure). Metacontroller could only tell these apart by
//     sending every actor of every namespace with each call.

// claimOf is the claim of a queue: flat queues are claimed by namespace
// and actor, nested ones by the bare name.
func claimOf(scoped bool, namespace, actor string) string {
	if scoped {
		return namespace + "/" + actor
	}
	return actor
}

// DescribeClaim names a claim as a status message does.
func DescribeClaim(claim string) string {
	if claim == "" {
		return "a claim asya-sync cannot read"
	}
	if ns, actor, flat := strings.Cut(claim, "/"); flat {
		return fmt.Sprintf("actor %s of namespace %s", actor, ns)
	}
	return fmt.Sprintf("the Asya 0.3 actors named %s", claim)
}

// Held is the error of a queue the broker has recorded to another claim,
// Holder: the queue is left alone.
type Held struct {
	Queue, Holder string
}

func (h *Held) Error() string {
	return fmt.Sprintf("queue %s is recorded on the broker to %s", h.Queue, DescribeClaim(h.Holder))
}

// HeldBy reports whether err is a *Held, and which.
func HeldBy(err error) (*Held, bool) {
	var h *Held
	return h, errors.As(err, &h)
}

// DeleteClaimed deletes q's queue, then its DLQ, with del, which leaves a
// queue another claim holds as it is and says so with a *Held error. The
// DLQ is tried whatever became of the queue; the queue's *Held error is
// returned after it, the DLQ's is not (finalize reports the queue kept).
func DeleteClaimed(q Queue, del func(name string) error) error {
	var held error
	for _, name := range []string{q.Name(), q.DLQName()} {
		err := del(name)
		if _, ok := HeldBy(err); ok {
			if name == q.Name() {
				held = err
			}
			continue
		}
		if err != nil {
			return err
		}
	}
	return held
}

// HeldError is a *Held as an *Error, its reason QueueConflict.
func HeldError(queue, holder string) *Error {
	h := &Held{Queue: queue, Holder: holder}
	return &Error{Reason: ReasonQueueConflict, Message: h.Error(), Err: h}
}

// Claimant is an actor claiming a queue, reduced to what decides ownership.
type Claimant struct {
	Namespace, Name string
	UID             string
	Created         time.Time
	Terminating     bool
}

// String is the claimant as users name it: namespace/name.
func (c Claimant) String() string { return c.Namespace + "/" + c.Name }

// claimKey is what two actors share when they claim one queue for the
// same messages: the transport and the claim.
type claimKey struct{ transport, claim string }

// keyOf reads the claim off a related actor as it came: a flat actor (its
// shape, as v1alpha1.ShapeOf tells it for the hook) claims namespace/actor
// on its transport, or on flatTransport, the service's for flat actors that
// name none.
func keyOf(obj *unstructured.Unstructured, flatTransport string) claimKey {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	t, _, _ := unstructured.NestedString(spec, "transport")
	if gen, _ := v1alpha1.ShapeOfObject(spec); gen == v1alpha1.Flat {
		actor, _, _ := unstructured.NestedString(spec, "actor")
		if t == "" {
			t = flatTransport
		}
		return claimKey{t, claimOf(true, obj.GetNamespace(), actor)}
	}
	return claimKey{t, claimOf(false, "", obj.GetName())}
}

// Owner is the ownership rule among the actors of one claim: of self and
// the actors Metacontroller sent (related objects, any namespace), it
// picks the owner of self's queue and says whether it is self. The
// claimants are the actors of self's claim on self's transport (keyOf);
// another claim of the same queue name is the broker's to turn away. One
// not being deleted comes before one that is, then the oldest, then the
// lowest uid: the first actor to claim a queue keeps it for as long as it
// lives, and the next in line takes over as soon as the owner is being
// deleted. The order of actors does not matter.
func Owner(self *v1alpha1.AsyncActor, actors []*unstructured.Unstructured, flatTransport string) (owner Claimant, mine bool) {
	owner, mine = Claimant{Namespace: self.Namespace, Name: self.Name, UID: string(self.UID),
		Created: self.CreationTimestamp.Time, Terminating: self.DeletionTimestamp != nil}, true
	want := claimKey{self.Spec.Transport, QueueOf(self).Claim()}
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
