package hook

import (
	"encoding/json"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unmarshal decodes a request body, the bulk of every hook call's work.
// The v2 decoder (the standalone form of Go's encoding/json/v2) validates
// and decodes in one pass where encoding/json makes two, which halves the
// cost of a sync of a realistic request (docs/performance.md). Unlike
// encoding/json it matches field names exactly and refuses invalid UTF-8,
// which the API server never produces. Duplicate names are taken, the
// last winning, as encoding/json takes them: Metacontroller marshals maps
// and cannot send any, and looking for them cost a twelfth of a sync.
// Specs are decoded with encoding/json's semantics (unmarshalSpec): a
// spec's errors are shown to users in the actor's status.
func unmarshal(data []byte, into any) error {
	return jsonv2.Unmarshal(data, into, readTimes, jsontext.AllowDuplicateNames(true))
}

// readTimes reads a metav1.Time as its UnmarshalJSON does, without the
// second decoder that method runs over each value: a realistic request
// holds about a hundred (the pods' conditions and container states), and
// that method took a sixteenth of a sync.
var readTimes = jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(readTime))

func readTime(dec *jsontext.Decoder, t *metav1.Time) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		t.Time = time.Time{}
		return nil
	case '"':
		parsed, err := time.Parse(time.RFC3339, tok.String())
		if err != nil {
			return err
		}
		t.Time = parsed.Local()
		return nil
	}
	return fmt.Errorf("cannot decode JSON %s into a time", tok.Kind())
}

// unmarshalV1 decodes as encoding/json does (field names matched without
// case, duplicate names and invalid UTF-8 accepted), on the v2
// implementation: the parent's metadata and status in half the time.
func unmarshalV1(data []byte, into any) error { return jsonv1.Unmarshal(data, into) }

// unmarshalSpec decodes an actor's spec as encoding/json does. What the v1
// decoder refuses is decoded again by encoding/json itself: its message is
// the one users read in the status, and its partial result is what the
// actor keeps.
func unmarshalSpec[T any](data []byte, into *T) error {
	if unmarshalV1(data, into) == nil {
		return nil
	}
	*into = *new(T)
	return json.Unmarshal(data, into)
}

// skipped is a member no view reads, read past as one value, which checks
// it as skipping does (syntax, UTF-8) a fifth faster: the
// decoder skips a member it has no field for token by token. The members
// given this type (managedFields, a pod's spec) are most of a request's
// bytes.
type skipped struct{}

func (*skipped) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	_, err := dec.ReadValue()
	return err
}
