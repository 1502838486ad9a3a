package hook

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTimesReadAsMetav1: the request's decoder reads a time as
// metav1.Time's own UnmarshalJSON does, and refuses what it refuses.
func TestTimesReadAsMetav1(t *testing.T) {
	type times struct {
		T metav1.Time  `json:"t"`
		P *metav1.Time `json:"p"`
	}
	for _, value := range []string{
		`"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:05.123456789Z"`, `"2026-01-02T03:04:05+02:00"`,
		`"\u0032026-01-02T03:04:05Z"`, `null`,
		`"2026-01-02 03:04:05"`, `""`, `1`, `{}`,
	} {
		body := []byte(`{"t": ` + value + `, "p": ` + value + `}`)
		var want, got times
		wantErr := json.Unmarshal(body, &want)
		gotErr := unmarshal(body, &got)
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: error %v, want %v", value, gotErr, wantErr)
			continue
		}
		if gotErr == nil && (got.T != want.T || (got.P == nil) != (want.P == nil) || (got.P != nil && *got.P != *want.P)) {
			t.Errorf("%s: read %v, %v, want %v, %v", value, got.T, got.P, want.T, want.P)
		}
	}
}
