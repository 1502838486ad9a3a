package v1alpha1

import (
	"encoding/json"
	"testing"
)

func TestCompositionTransport(t *testing.T) {
	for _, tc := range []struct {
		name, spec        string
		wantKind, wantFld string
	}{
		{"none", `{}`, "", ""},
		{"compositionRef", `{"compositionRef":{"name":"asyncactor-rabbitmq"}}`, "rabbitmq", "spec.compositionRef.name"},
		{"selector", `{"compositionSelector":{"matchLabels":{"asya.sh/transport":"pubsub"}}}`, "pubsub", `spec.compositionSelector.matchLabels["asya.sh/transport"]`},
		{"ref wins over selector", `{"compositionRef":{"name":"asyncactor-sqs"},"compositionSelector":{"matchLabels":{"asya.sh/transport":"rabbitmq"}}}`,
			"sqs", "spec.compositionRef.name"},
		{"own composition: the selector says", `{"compositionRef":{"name":"team-actors"},"compositionSelector":{"matchLabels":{"asya.sh/transport":"sqs"}}}`,
			"sqs", `spec.compositionSelector.matchLabels["asya.sh/transport"]`},
		{"own composition alone", `{"compositionRef":{"name":"team-actors"}}`, "", ""},
		{"prefix alone", `{"compositionRef":{"name":"asyncactor-"}}`, "", ""},
		{"selector without the label", `{"compositionSelector":{"matchLabels":{"team":"ml"}}}`, "", ""},
		{"not objects", `{"compositionRef":"asyncactor-sqs","compositionSelector":{"matchLabels":"x"}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c ClaimFields
			if err := json.Unmarshal([]byte(tc.spec), &c); err != nil {
				t.Fatal(err)
			}
			kind, field := c.CompositionTransport()
			if kind != tc.wantKind || field != tc.wantFld {
				t.Errorf("CompositionTransport() = %q, %q; want %q, %q", kind, field, tc.wantKind, tc.wantFld)
			}
		})
	}
}
