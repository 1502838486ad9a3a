package config

import (
	"sort"
	"strings"

	"github.com/asya-sh/asya-sync/transport/brokers"
	"github.com/asya-sh/asya-sync/transport/pubsub"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
	"github.com/asya-sh/asya-sync/transport/sqs"
)

// kinds are the transport kinds a configuration may name, by type: one
// line per kind, each returning the kind's empty settings to decode into.
var kinds = map[string]func() brokers.Kind{
	pubsub.Type:   func() brokers.Kind { return &pubsub.Settings{} },
	rabbitmq.Type: func() brokers.Kind { return &rabbitmq.Settings{} },
	sqs.Type:      func() brokers.Kind { return &sqs.Settings{} },
}

// kindTypes lists the types for messages: "a or b", "a, b or c".
func kindTypes() string {
	types := make([]string, 0, len(kinds))
	for t := range kinds {
		types = append(types, t)
	}
	sort.Strings(types)
	last := len(types) - 1
	if last < 1 {
		return strings.Join(types, "")
	}
	return strings.Join(types[:last], ", ") + " or " + types[last]
}
