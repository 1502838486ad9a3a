#!/usr/bin/env bash
# Checks the GitHub workflows (.github/workflows/) with actionlint, which
# also runs shellcheck on their run: blocks, then shellcheck on the scripts
# only a workflow runs (.ci/release.sh) and on this one.
#
# actionlint is built from the Go module proxy at ACTIONLINT_VERSION into
# .cache/bin, once per version and Go release (its own go.mod and go.sum
# pin what it is built from, checked against the checksum database).
# Debian's shellcheck is installed here when missing (as root or with
# sudo). Without it: a failure with ASYA_REQUIRE_INTEGRATION=1 (CI), a loud
# skip otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
ACTIONLINT_VERSION=v1.7.12
BIN=${ASYA_E2E_BIN:-$PWD/.cache/bin}

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

missing() {
  if [ "${ASYA_REQUIRE_INTEGRATION:-}" = 1 ]; then
    printf '\n[workflows] FAILED: %s\n\n' "$*" >&2
    exit 1
  fi
  printf '\n[workflows] SKIPPED: %s (set ASYA_REQUIRE_INTEGRATION=1 to fail instead)\n\n' "$*" >&2
  exit 0
}

build_actionlint() {
  local want
  want="$ACTIONLINT_VERSION $(go env GOVERSION)"
  if [ -x "$BIN/actionlint" ] && [ "$(cat "$BIN/.actionlint-stamp" 2>/dev/null)" = "$want" ]; then
    return
  fi
  echo "building actionlint $ACTIONLINT_VERSION into $BIN" >&2
  mkdir -p "$BIN"
  # Outside this module: GOFLAGS' -mod applies to ours, not to actionlint's.
  GOFLAGS='' GOBIN=$BIN CGO_ENABLED=0 go install -trimpath -ldflags=-s \
    "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION" ||
    missing "could not build actionlint $ACTIONLINT_VERSION (module proxy unreachable?)"
  echo "$want" >"$BIN/.actionlint-stamp"
}

install_shellcheck() {
  command -v shellcheck >/dev/null && return
  if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
    return
  fi
  echo "installing shellcheck from Debian" >&2
  $SUDO apt-get update -qq >&2 || true
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends shellcheck >&2 || true
}

build_actionlint
install_shellcheck
command -v shellcheck >/dev/null ||
  missing "shellcheck not found (Debian package shellcheck): actionlint would not check the run: blocks"
"$BIN/actionlint" -version | head -n 1
shellcheck --version | sed -n 's/^version: /shellcheck /p'
# actionlint finds shellcheck on PATH; naming it makes a missing one an error.
"$BIN/actionlint" -shellcheck "$(command -v shellcheck)" .github/workflows/*.yml
shellcheck .ci/release.sh .ci/workflows.sh
echo "workflows: actionlint and shellcheck found nothing"
