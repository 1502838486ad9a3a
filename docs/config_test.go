package docs

import (
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/asya-sh/asya-sync/config"
)

// configItem is an item of docs/design.md's list of configuration keys:
// the keys it starts with, "- `watch.pods`:" or "- `a`, `b`:".
var configItem = regexp.MustCompile("^\\s*- ((?:`[^`]+`(?:, | and )?)+)")

// TestServiceConfigurationKeysDocumented: docs/design.md#service-configuration
// has an item for every key of the service configuration, the JSON keys
// of config.Config and, written `watch.pods`, of the blocks it holds
// (config.Watch, config.FlatActors), and none for a key it does not have.
func TestServiceConfigurationKeysDocumented(t *testing.T) {
	want := map[string]bool{}
	configKeys(reflect.TypeOf(config.Config{}), "", want)
	if len(want) < 10 {
		t.Fatalf("config.Config has %d keys: the reflection no longer reads it", len(want))
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(section(t, "docs/design.md", "## Service configuration"), "\n") {
		m := configItem.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, key := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
			documented[key[1]] = true
		}
	}
	for _, key := range sortedKeys(want) {
		if !documented[key] {
			t.Errorf("docs/design.md#service-configuration has no item for the key %s", key)
		}
	}
	for _, key := range sortedKeys(documented) {
		if !want[key] {
			t.Errorf("docs/design.md#service-configuration has an item for %s, which config.Config does not have", key)
		}
	}
}

// configKeys adds the JSON keys of the struct type to keys, with prefix,
// and those of its fields whose type is a struct of package config.
func configKeys(typ reflect.Type, prefix string, keys map[string]bool) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		keys[prefix+name] = true
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == typ.PkgPath() {
			configKeys(f.Type, prefix+name+".", keys)
		}
	}
}

// section is the text of a document under heading, up to the next
// heading of the same level or higher.
func section(t *testing.T, file, heading string) string {
	t.Helper()
	text := readDoc(t, file)
	_, after, ok := strings.Cut(text, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no heading %q", file, heading)
	}
	level := strings.Repeat("#", strings.Index(heading, " "))
	lines := strings.Split(after, "\n")
	inCode := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(line, "#") {
			hashes, _, _ := strings.Cut(line, " ")
			if len(hashes) <= len(level) && strings.Trim(hashes, "#") == "" {
				return strings.Join(lines[:i], "\n")
			}
		}
	}
	return after
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
