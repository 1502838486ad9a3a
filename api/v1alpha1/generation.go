package v1alpha1

// What the two generations name differently, outside the builders: the
// name an actor's sidecar routes by, and so its queue's.

// QueueActor is the actor's name on its queues, and whether they are
// scoped by namespace: a nested actor's metadata.name, shared by its
// namesakes in every namespace (asya-<name>), or a flat actor's
// spec.actor within its namespace (asya-<namespace>-<actor>).
func (a *AsyncActor) QueueActor() (name string, scoped bool) {
	if a.Spec.AsyaGeneration == Flat {
		return a.Spec.Actor, true
	}
	return a.Name, false
}

// QueueActorField is the field QueueActor reads, as users write it.
func (s AsyncActorSpec) QueueActorField() string {
	if s.AsyaGeneration == Flat {
		return "spec.actor"
	}
	return "metadata.name"
}

// ProcessingTimeout is the per-message timeout in seconds, which shapes
// the queue on some brokers (SQS's visibility timeout).
func (a *AsyncActor) ProcessingTimeout() int32 { return a.Spec.Timeout.Processing }

// TransportName is the transport the actor's queue is on.
func (a *AsyncActor) TransportName() string { return a.Spec.Transport }
