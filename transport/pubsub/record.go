package pubsub

import (
	"fmt"
	"maps"
	"strings"
)

// The owner record (docs/design.md#owner-records) is two labels on the
// topic and on the subscription. A label holds lowercase letters, digits,
// '-' and '_', at most 63 of them: a claim's '/' cannot be written, so the
// namespace of a flat claim has a label of its own, and the '.' a nested
// actor's name may hold is written '_', which no Kubernetes name holds.
const (
	// LabelOwner is the claim's actor.
	LabelOwner = "asya-sh-owner"
	// LabelOwnerNamespace is the claim's namespace; a nested claim has
	// none.
	LabelOwnerNamespace = "asya-sh-owner-namespace"
	maxLabelValue       = 63
)

// recordOf is the labels that record claim (transport.Queue.Claim).
func recordOf(claim string) (map[string]string, error) {
	labels := map[string]string{}
	actor := claim
	if ns, name, flat := strings.Cut(claim, "/"); flat {
		labels[LabelOwnerNamespace] = ns
		actor = name
	}
	labels[LabelOwner] = strings.ReplaceAll(actor, ".", "_")
	for key, v := range labels {
		if len(v) > maxLabelValue {
			return nil, fmt.Errorf("the owner record of claim %s does not fit Pub/Sub's labels: the label %s would be %d characters, of at most %d", claim, key, len(v), maxLabelValue)
		}
	}
	return labels, nil
}

// claimIn reads the claim recorded in labels: "" when they record none.
func claimIn(labels map[string]string) string {
	actor, ok := labels[LabelOwner]
	if !ok || actor == "" {
		return ""
	}
	actor = strings.ReplaceAll(actor, "_", ".")
	if ns := labels[LabelOwnerNamespace]; ns != "" {
		return ns + "/" + actor
	}
	return actor
}

// withRecord is labels with the record written over any other record,
// every other label kept.
func withRecord(labels, record map[string]string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	delete(out, LabelOwnerNamespace)
	maps.Copy(out, record)
	return out
}
