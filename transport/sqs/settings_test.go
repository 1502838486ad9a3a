package sqs

import (
	"testing"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

func TestVisibilityTimeoutFor(t *testing.T) {
	tests := []struct {
		configured, processing, want int32
	}{
		{0, 300, 600},
		{90, 300, 90},
		{0, 0, 600},
		{0, 30000, MaxVisibilityTimeout},
	}
	for _, tt := range tests {
		s := &Settings{VisibilityTimeout: tt.configured}
		if got := s.VisibilityTimeoutFor(tt.processing); got != tt.want {
			t.Errorf("configured %d, processing %d: got %d, want %d", tt.configured, tt.processing, got, tt.want)
		}
	}
}
