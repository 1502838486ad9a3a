//go:build e2e

package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestServeLogsBuildFirst: the first line serve logs names the build, the
// same build `asya-sync version` prints.
func TestServeLogsBuildFirst(t *testing.T) {
	f, err := os.Open(env.Service.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		t.Fatalf("%s is empty", env.Service.Log)
	}
	var first struct{ Message, Version, Commit, Go string }
	if err := json.Unmarshal(sc.Bytes(), &first); err != nil {
		t.Fatalf("first log line is not JSON: %v: %s", err, sc.Text())
	}
	out, err := exec.Command(env.SyncBin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("asya-sync %s (commit %s, %s)", first.Version, first.Commit, first.Go)
	if first.Version == "" || first.Commit == "" || first.Go == "" || strings.TrimSpace(string(out)) != want {
		t.Errorf("first log line %s; asya-sync version prints %q", sc.Text(), out)
	}
}
