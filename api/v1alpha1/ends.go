package v1alpha1

// The actors that end the routes of Asya 0.3: its sidecar sends every
// finished message to happy-end, every failed one to error-end. Upstream's
// compositions still count both among the flat generation's system actors.
const (
	HappyEnd = "happy-end"
	ErrorEnd = "error-end"
)

// Ends names the actors where a flat namespace's routes end, its sink and
// sump, as the service configures them. It is the one place that decides
// which actors end routes: their sidecars run in end mode
// (ASYA_IS_END_ACTOR), their runtimes skip validation, and a flat sink's
// or sump's queue is shared by every actor of its namespace.
type Ends struct {
	Sink, Sump string
}

// EndsRoutes reports whether the actor ends routes. A sink that did not
// would route its own output to the sink, which is itself, for ever.
func (e Ends) EndsRoutes(a *AsyncActor) bool {
	name := a.Name
	if a.Spec.AsyaGeneration == Flat {
		if e.Shares(a) {
			return true
		}
		name = a.Spec.Actor
	}
	return name == HappyEnd || name == ErrorEnd
}

// Shares reports whether the actor is its namespace's flat sink or sump,
// whose queue every flat actor of the namespace ensures.
func (e Ends) Shares(a *AsyncActor) bool {
	return a.Spec.AsyaGeneration == Flat && (a.Spec.Actor == e.Sink || a.Spec.Actor == e.Sump)
}

// QueuesOf are the actors whose queues the actor's sidecar ends routes in,
// besides its own: a flat namespace's sink and sump. A nested actor has
// none of its own to ensure.
func (e Ends) QueuesOf(a *AsyncActor) []string {
	if a.Spec.AsyaGeneration != Flat {
		return nil
	}
	var out []string
	for _, name := range []string{e.Sink, e.Sump} {
		if name != a.Spec.Actor {
			out = append(out, name)
		}
	}
	return out
}
