package brokers

// Every test package accepts -update.
import _ "github.com/asya-sh/asya-sync/internal/golden"
