package config

import (
	"encoding/json"
	"fmt"
)

type rawTransport struct {
	Type    string          `json:"type"`
	Enabled *bool           `json:"enabled"`
	Config  json.RawMessage `json:"config"`
}

// build turns a raw transport into a checked one. Its errors start with the
// key below "transports.<name>." that is wrong.
func (rt rawTransport) build(name string) (Transport, error) {
	t := Transport{Name: name, Enabled: rt.Enabled == nil || *rt.Enabled}
	newKind, ok := kinds[rt.Type]
	switch {
	case rt.Type == "":
		return t, fmt.Errorf("type: required (%s)", kindTypes())
	case !ok:
		return t, fmt.Errorf("type: unknown transport type %q (want %s)", rt.Type, kindTypes())
	}
	t.Kind = newKind()
	cfg := rt.Config
	if len(cfg) == 0 || string(cfg) == "null" {
		cfg = json.RawMessage("{}")
	}
	if err := decodeStrict(cfg, t.Kind); err != nil {
		return t, fmt.Errorf("config: %w", err)
	}
	if err := t.Kind.Check(); err != nil {
		return t, fmt.Errorf("config.%w", err)
	}
	return t, nil
}
