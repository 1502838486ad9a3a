package transport

import (
	"errors"
	"fmt"
	"strings"
	"time"
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

func keyOf(a Actor) claimKey { return claimKey{a.TransportName(), QueueOf(a).Claim()} }

// Owner is the ownership rule among the actors of one claim: of self and
// the actors Metacontroller sent (related objects, any namespace, decoded
// as self is, each with the service's defaults), it picks the owner of
// self's queue and says whether it is self. The claimants are the actors
// of self's claim on self's transport; another claim of the same queue
// name is the broker's to turn away, and an actor that names no actor for
// its queue claims none. One not being deleted comes before one that is,
// then the oldest, then the lowest uid: the first actor to claim a queue
// keeps it for as long as it lives, and the next in line takes over as
// soon as the owner is being deleted. The order of actors does not matter.
func Owner[A Actor](self A, actors []A) (owner Claimant, mine bool) {
	owner, mine = claimantOf(self), true
	want := keyOf(self)
	for _, a := range actors {
		if name, _ := a.QueueActor(); name == "" || keyOf(a) != want || sameActor(a, self) {
			continue
		}
		if rival := claimantOf(a); before(rival, owner) {
			owner, mine = rival, false
		}
	}
	return owner, mine
}

func claimantOf(a Actor) Claimant {
	return Claimant{Namespace: a.GetNamespace(), Name: a.GetName(), UID: string(a.GetUID()),
		Created: a.GetCreationTimestamp().Time, Terminating: a.GetDeletionTimestamp() != nil}
}

func sameActor(a, self Actor) bool {
	if self.GetUID() != "" && a.GetUID() != "" {
		return a.GetUID() == self.GetUID()
	}
	return a.GetNamespace() == self.GetNamespace()
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
