package finalize

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/transport"
)

func TestKept(t *testing.T) {
	actor := func(annotations map[string]string) *v1alpha1.AsyncActor {
		return &v1alpha1.AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "team-a", Annotations: annotations}}
	}
	retain := map[string]string{AnnotationQueueDeletionPolicy: PolicyRetain}
	other := transport.Claimant{Namespace: "team-b", Name: "echo"}
	tests := []struct {
		name       string
		claim      Claim
		kept       bool
		wantReason string
	}{
		{"owner, nobody else: deleted", Claim{Actor: actor(nil), Mine: true}, false, ""},
		{"owner asks to retain", Claim{Actor: actor(retain), Mine: true}, true, ""},
		{"another actor owns it", Claim{Actor: actor(nil), Owner: other}, true, "QueueKept"},
		{"keyed by name: cannot tell", Claim{Actor: actor(nil), Mine: true, KeyedByName: true}, true, "QueueKept"},
		{"the transport leaves queues alone", Claim{Actor: actor(nil), Mine: true, Unmanaged: true}, true, "QueueKept"},
		{"the transport does not create queues: not asya-sync's to delete", Claim{Actor: actor(nil), Mine: true, NotCreated: true}, true, "QueueKept"},
		{"not created, the actor says delete", Claim{Actor: actor(map[string]string{AnnotationQueueDeletionPolicy: PolicyDelete}), Mine: true, NotCreated: true}, false, ""},
		{"not created, retained", Claim{Actor: actor(retain), Mine: true, NotCreated: true}, true, ""},
		{"not created, another actor owns it", Claim{Actor: actor(nil), Owner: other, NotCreated: true}, true, "QueueKept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, kept := Kept(tt.claim)
			if kept != tt.kept || state.Reason != tt.wantReason || kept && !state.Ready {
				t.Errorf("Kept = %+v, %v; want kept=%v, reason %q, ready when kept", state, kept, tt.kept, tt.wantReason)
			}
		})
	}
}
