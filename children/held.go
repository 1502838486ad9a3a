package children

import (
	"strings"

	"github.com/asya-sh/asya-sync/transport"
)

// AnnotationQueueHeld is on the workload of an actor that stands by
// because the broker records one of its queues to another claim
// (docs/design.md#owner-records): "<queue>=<claim>". Only the broker can say
// whether that is still so; while it cannot be asked, the sync reads the
// last answer here and keeps the actor standing by, since a sidecar
// started meanwhile would consume the other claim's messages as soon as
// the broker is back. It sits on the workload's own metadata, where it
// restarts nothing.
const AnnotationQueueHeld = "asya.sh/queue-held-by"

func heldValue(h *transport.Held) string { return h.Queue + "=" + h.Holder }

// HeldBefore reads AnnotationQueueHeld off an observed workload: nil
// without one.
func HeldBefore(value string) *transport.Held {
	queue, holder, ok := strings.Cut(value, "=")
	if !ok || queue == "" {
		return nil
	}
	return &transport.Held{Queue: queue, Holder: holder}
}
