package hook

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	asyaruntime "github.com/asya-sh/asya-sync/runtime"
)

// Script is an observed runtime script (a ConfigMap's key, a pod
// template's annotation), kept as the request's bytes and read only when
// the sync needs it: while the actor's pods keep a runtime that is not the
// current one (children.Running). A steady sync whose pods run the
// current runtime reads nothing, and copies nothing: raw points into the
// request, which a sync holds until it has answered (a decoder reading
// from a byte slice, as unmarshal's does, hands out values within it).
type Script struct {
	raw   jsontext.Value
	known *asyaruntime.Script // read before, from the same bytes
}

// UnmarshalJSONFrom keeps a string or null, and refuses any other value
// as decoding it into a string would.
func (s *Script) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if k := val.Kind(); k != '"' && k != 'n' {
		return fmt.Errorf("cannot decode JSON %s into a string", k)
	}
	if s.known = scriptsRead.recall(val); s.known == nil {
		s.raw = val
	}
	return nil
}

// Read is the script: none when it is absent, empty when null.
func (s *Script) Read() asyaruntime.Script {
	switch {
	case s.known != nil:
		return *s.known
	case s.raw == nil:
		return asyaruntime.Script{}
	}
	var src string
	_ = unmarshal(s.raw, &src) // a string or null, as UnmarshalJSONFrom checked
	script := asyaruntime.NewScript(src)
	scriptsRead.remember(s.raw, script)
	return script
}

// scriptsRead are the scripts read last, by their bytes. Reading one
// decodes 15 KB, hashes it and reads its protocol, which pods that keep
// their runtime would cost every sync; the pods of a fleet keep few
// scripts (those of the releases before the current one), so a sync
// whose pods keep theirs finds it here for the cost of comparing bytes.
var scriptsRead = &recentScripts{}

type recentScripts struct {
	mu   sync.Mutex
	read [4]struct {
		raw    jsontext.Value
		script *asyaruntime.Script
	}
	next int
}

func (r *recentScripts) recall(raw jsontext.Value) *asyaruntime.Script {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.read {
		if e.script != nil && bytes.Equal(e.raw, raw) {
			return e.script
		}
	}
	return nil
}

func (r *recentScripts) remember(raw jsontext.Value, script asyaruntime.Script) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read[r.next].raw, r.read[r.next].script = bytes.Clone(raw), &script
	r.next = (r.next + 1) % len(r.read)
}
