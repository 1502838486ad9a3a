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

func TestQueueIdentifier(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
		want string
	}{
		{"aws", Settings{Region: "eu-west-1", AccountID: "123456789012"}, "arn:aws:sqs:eu-west-1:123456789012:asya-ml-echo"},
		{"china", Settings{Region: "cn-north-1", AccountID: "123456789012"}, "arn:aws-cn:sqs:cn-north-1:123456789012:asya-ml-echo"},
		{"govcloud", Settings{Region: "us-gov-west-1", AccountID: "123456789012"}, "arn:aws-us-gov:sqs:us-gov-west-1:123456789012:asya-ml-echo"},
		{"emulator: AWS's ARN in the configured region and account",
			Settings{Region: "us-east-1", AccountID: "000000000000", Endpoint: "http://localstack:4566"},
			"arn:aws:sqs:us-east-1:000000000000:asya-ml-echo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.QueueIdentifier("asya-ml-echo"); got != tt.want {
				t.Errorf("QueueIdentifier = %s, want %s", got, tt.want)
			}
		})
	}
}
