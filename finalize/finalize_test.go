package finalize

import (
	"strings"
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

func TestKeptAdopted(t *testing.T) {
	actor := func(flat bool, policy string) *v1alpha1.AsyncActor {
		a := &v1alpha1.AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "team-a"}}
		if policy != "" {
			a.Annotations = map[string]string{AnnotationQueueDeletionPolicy: policy}
		}
		if flat {
			a.Spec.AsyaGeneration, a.Spec.Actor = v1alpha1.Flat, "echo"
		}
		return a
	}
	tests := []struct {
		name           string
		claim          Claim
		asks, kept     bool
		wantMentioning string
	}{
		{"flat, adopted: kept", Claim{Actor: actor(true, ""), Mine: true, Adopted: true}, true, true, "asya.sh/queue-deletion-policy: Delete"},
		{"flat, created by asya-sync: deleted", Claim{Actor: actor(true, ""), Mine: true}, true, false, ""},
		{"flat, adopted, the actor says delete: deleted", Claim{Actor: actor(true, PolicyDelete), Mine: true, Adopted: true}, false, false, ""},
		{"flat, adopted, retained: kept (by Kept, before)", Claim{Actor: actor(true, PolicyRetain), Mine: true, Adopted: true}, true, true, "adopted"},
		{"nested, adopted: deleted as the 0.3 operator did", Claim{Actor: actor(false, ""), Mine: true, Adopted: true}, false, false, ""},
		{"nested, created: deleted", Claim{Actor: actor(false, ""), Mine: true}, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AsksAdopted(tt.claim); got != tt.asks {
				t.Errorf("AsksAdopted = %v, want %v", got, tt.asks)
			}
			state, kept := KeptAdopted(tt.claim)
			if kept != tt.kept || kept && (!state.Ready || state.Reason != "QueueKept" || !strings.Contains(state.Message, tt.wantMentioning)) {
				t.Errorf("KeptAdopted = %+v, %v; want kept=%v, ready, QueueKept, mentioning %q", state, kept, tt.kept, tt.wantMentioning)
			}
		})
	}
}
