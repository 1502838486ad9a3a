package main

import (
	"flag"
	"strings"
	"testing"
)

// TestUsageNamesEveryServeFlag: the usage text is all a user of
// "asya-sync help" sees of serve, so each flag serve defines is in it.
func TestUsageNamesEveryServeFlag(t *testing.T) {
	n := 0
	serveFlagSet(&serveFlags{}).VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(usage, "--"+f.Name+" ") && !strings.Contains(usage, "--"+f.Name+"]") {
			t.Errorf("the usage text does not name --%s", f.Name)
		}
	})
	if n == 0 {
		t.Fatal("serve defines no flag")
	}
}
