package hook

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// Text is a JSON string of the request kept as it came and decoded only
// when read: a runtime script (15 KB), which a sync reads only while the
// actor's pods keep a runtime that is not the current one
// (children.Running). A steady sync copies its bytes and decodes nothing.
type Text struct{ raw jsontext.Value }

// UnmarshalJSONFrom keeps a string or null, and refuses any other value
// as decoding it into a string would.
func (t *Text) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if k := val.Kind(); k != '"' && k != 'n' {
		return fmt.Errorf("cannot decode JSON %s into a string", k)
	}
	t.raw = append(jsontext.Value(nil), val...)
	return nil
}

// String decodes the text: empty when it is absent or null.
func (t *Text) String() string {
	var s string
	_ = unmarshal(t.raw, &s) // a string or null, as UnmarshalJSONFrom checked
	return s
}
