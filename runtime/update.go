package runtime

// Update is what a new runtime script does to an actor whose pods run
// another one (docs/upgrade.md). Like Delivery it is plain data, so that
// the pure builders need not import the service configuration.
type Update string

const (
	// Pinned: the pods keep the script they run until they roll for
	// another reason (the rest of their template changed) or the actor
	// asks for the new script. An upgrade of asya-sync restarts no pods.
	Pinned Update = "Pinned"
	// Immediate: the pods roll to the new script as soon as asya-sync
	// serves it, every actor at once.
	Immediate Update = "Immediate"
)

// Valid reports whether u is one of the policies.
func (u Update) Valid() bool { return u == Pinned || u == Immediate }
