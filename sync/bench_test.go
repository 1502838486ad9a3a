package sync

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkSync measures one sync hook call end to end, minus HTTP and the
// broker (the queue ensure is cached in steady state), for golden cases of
// increasing size.
func BenchmarkSync(b *testing.B) {
	for _, name := range []string{"minimal", "pod-security-restricted", "pod-security-violation", "scaling-on", "multiple-containers", "invalid-keeps-children", "realistic"} {
		b.Run(name, func(b *testing.B) {
			req, h := loadCase(b, filepath.Join(casesDir, name))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := h.Answer(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
