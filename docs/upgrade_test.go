package docs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeKubectl stands in for kubectl and for asya-sync behind it: the
// workloads listed in $STATE/workloads ("namespace Kind name"), their
// asya.sh/runtime-pending in $STATE/pending/<ns>_<name>, their actors'
// asya.sh/runtime-update in $STATE/update/<ns>_<name>. Annotating an
// actor Immediate clears its workload's runtime-pending, as its next sync
// would, unless $STATE/invalid/<ns>_<name> says its spec is invalid; a
// rollout fails where $STATE/unready/<ns>_<name> says so. Every call is
// logged to $STATE/calls, its arguments tab-separated.
const fakeKubectl = `#!/usr/bin/env bash
set -u
s=$STATE
{ printf kubectl; for a in "$@"; do printf '\t%s' "$a"; done; echo; } >> "$s/calls"
ns="" overwrite=no pos=()
while [ $# -gt 0 ]; do
  case $1 in
    -n|--namespace) ns=$2; shift ;;
    --namespace=*) ns=${1#*=} ;;
    -o|-l|--selector) shift ;;
    --overwrite) overwrite=yes ;;
    -*) ;;
    *) pos+=("$1") ;;
  esac
  shift
done
key() { echo "${ns}_${1##*/}"; }
case ${pos[0]}:${pos[1]:-} in
get:deployments,statefulsets)
  while read -r wns kind name; do
    printf '%s %s %s %s\n' "$wns" "$kind" "$name" "$(cat "$s/pending/${wns}_$name" 2>/dev/null || true)"
  done < "$s/workloads" ;;
get:asyncactor|get:asyncactors|get:asya)
  cat "$s/update/$(key "${pos[2]}")" 2>/dev/null || true ;;
get:*/*)
  cat "$s/pending/$(key "${pos[1]}")" 2>/dev/null || true ;;
annotate:asyncactor|annotate:asyncactors|annotate:asya)
  k=$(key "${pos[2]}")
  case ${pos[3]} in
  asya.sh/runtime-update-) rm -f "$s/update/$k" ;;
  asya.sh/runtime-update=*)
    if [ -e "$s/update/$k" ] && [ $overwrite = no ]; then
      echo "error: --overwrite is false but found the following declared annotation(s): 'asya.sh/runtime-update' already has a value ($(cat "$s/update/$k"))" >&2
      exit 1
    fi
    printf %s "${pos[3]#*=}" > "$s/update/$k"
    if [ "${pos[3]#*=}" = Immediate ] && [ ! -e "$s/invalid/$k" ]; then rm -f "$s/pending/$k"; fi ;;
  *) echo "fake kubectl: annotation ${pos[3]}" >&2; exit 2 ;;
  esac ;;
rollout:status)
  if [ -e "$s/unready/$(key "${pos[2]}")" ]; then echo "error: timed out waiting for the condition" >&2; exit 1; fi ;;
*) echo "fake kubectl: $*" >&2; exit 2 ;;
esac
`

// TestUpgradePacedLoop runs docs/upgrade.md's paced loop as printed,
// against a kubectl that plays the cluster: the loop rolls the actors that
// hold a runtime back one by one; leaves an actor whose
// asya.sh/runtime-update its user set (Pinned or Immediate) alone; gives
// an actor that never takes the new runtime (an invalid spec) WAIT
// seconds, removes its own annotation again and goes on; stops at an
// actor whose pods do not become ready; removes every annotation it set;
// and names the actors it did not roll, failing.
func TestUpgradePacedLoop(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the loop with")
	}
	loop := fencedAfter(t, "docs/upgrade.md", "## Rolling the new runtime, paced", "sh")
	if !strings.HasPrefix(loop, "PAUSE=") {
		t.Fatalf("docs/upgrade.md's paced loop no longer starts with PAUSE=, as e2e/node/node_lifecycle_test.go reads it:\n%s", loop)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	for _, d := range []string{"pending", "update", "invalid", "unready", "bin"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(state, rel), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/kubectl", fakeKubectl)
	write("workloads", strings.Join([]string{
		"a Deployment current", // runs the current runtime
		"a Deployment good",
		"a Deployment kept",   // the user pinned it
		"a Deployment mine",   // the user asked for Immediate already
		"a Deployment broken", // invalid: never takes the runtime
		"b StatefulSet good2",
		"b Deployment bad", // its new pods never become ready
		"b Deployment after",
	}, "\n")+"\n")
	for _, k := range []string{"a_good", "a_kept", "a_mine", "a_broken", "b_good2", "b_bad", "b_after"} {
		write("pending/"+k, "new-runtime-hash")
	}
	write("update/a_kept", "Pinned")
	write("update/a_mine", "Immediate")
	write("invalid/a_broken", "")
	write("unready/b_bad", "")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-euo", "pipefail", "-c", "PAUSE=0\nWAIT=2\n"+loop)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STATE="+state, "PATH="+filepath.Join(state, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the paced loop did not end within 30 s with WAIT=2: an actor that never takes the new runtime holds it\n%s", out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the paced loop ended with %v, want a failure naming the actors it did not roll\n%s", err, out)
	}
	t.Logf("output:\n%s", out)

	var annotated []string
	calls, err := os.ReadFile(filepath.Join(state, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		args := strings.Split(line, "\t")
		if slices.Contains(args, "--overwrite") {
			t.Errorf("the paced loop overwrites an annotation: %q", args)
		}
		if len(args) > 1 && args[1] == "annotate" && strings.HasPrefix(args[len(args)-1], "asya.sh/runtime-update=") {
			annotated = append(annotated, args[len(args)-2])
		}
	}
	if want := []string{"good", "broken", "good2", "bad"}; !slices.Equal(annotated, want) {
		t.Errorf("the paced loop annotated %v, want %v in that order (not the actors the user annotated, none after the one whose pods failed)", annotated, want)
	}
	for k, want := range map[string]string{"a_kept": "Pinned", "a_mine": "Immediate", "a_good": "", "a_broken": "", "b_good2": "", "b_bad": "", "b_after": ""} {
		got, _ := os.ReadFile(filepath.Join(state, "update", k))
		if string(got) != want {
			t.Errorf("%s: asya.sh/runtime-update is %q after the loop, want %q", k, got, want)
		}
	}
	for k, want := range map[string]bool{"a_good": false, "b_good2": false, "a_broken": true, "a_kept": true, "a_mine": true, "b_after": true} {
		if _, err := os.Stat(filepath.Join(state, "pending", k)); (err == nil) != want {
			t.Errorf("%s: runtime pending %v after the loop, want %v", k, err == nil, want)
		}
	}
	for _, want := range []string{"a/kept", "a/mine"} {
		if !regexp.MustCompile(`(?m)^` + want + `: left alone`).Match(out) {
			t.Errorf("the paced loop does not say it left %s alone", want)
		}
	}
	if !regexp.MustCompile(`(?m)^not rolled: a/broken b/bad$`).Match(out) {
		t.Errorf("the paced loop does not end naming a/broken and b/bad as not rolled")
	}
}

// TestUpgradeWithInstalledValues: every helm upgrade docs/upgrade.md
// prints passes the values installed with, never --reuse-values, which
// takes the old chart's defaults along.
func TestUpgradeWithInstalledValues(t *testing.T) {
	doc := readDoc(t, "docs/upgrade.md")
	upgrades, inCode := 0, false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		cmd, _, _ := strings.Cut(line, "#")
		if !inCode || !strings.Contains(cmd, "helm upgrade") {
			continue
		}
		upgrades++
		if strings.Contains(cmd, "--reuse-values") || !strings.Contains(cmd, " -f ") {
			t.Errorf("docs/upgrade.md: %q: upgrade with the values installed with (-f), not --reuse-values", strings.TrimSpace(line))
		}
	}
	if upgrades == 0 {
		t.Fatal("docs/upgrade.md prints no helm upgrade")
	}
}
