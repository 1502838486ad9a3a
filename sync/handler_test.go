package sync

import (
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/transport"
)

// NewBrokerHandler is a handler over the real brokers of the service
// configuration yaml, closed when the test ends. Exported for this
// package's external tests.
func NewBrokerHandler(t *testing.T, yaml string) *Handler {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	set, err := transport.Open(cfg.Enabled(), cfg.QueueCacheTTL.Duration, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return &Handler{Config: cfg, Transports: set, Script: testScript, Now: time.Now}
}
