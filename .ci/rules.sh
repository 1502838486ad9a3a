#!/usr/bin/env bash
# Checks and unit-tests the chart's alerting rules with promtool, from
# Debian's prometheus package (installed here when missing):
#   promtool check rules chart/files/alerts.yaml
#   promtool test rules  chart/files/alerts_test.yaml
# The Go tests that parse the dashboard's queries find promtool on PATH.
# Without promtool: a failure with ASYA_REQUIRE_INTEGRATION=1 (CI), a loud
# skip otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

missing() {
  if [ "${ASYA_REQUIRE_INTEGRATION:-}" = 1 ]; then
    printf '\n[rules] FAILED: %s\n\n' "$*" >&2
    exit 1
  fi
  printf '\n[rules] SKIPPED: %s (set ASYA_REQUIRE_INTEGRATION=1 to fail instead)\n\n' "$*" >&2
  exit 0
}

install_promtool() {
  command -v promtool >/dev/null && return
  if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
    return
  fi
  # The package's maintainer scripts would start a Prometheus server; only
  # its promtool is wanted, so keep services from starting.
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  $SUDO apt-get update -qq >&2 || true
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2 || true
}

install_promtool
command -v promtool >/dev/null || missing "promtool not found (Debian package prometheus)"
promtool --version 2>&1 | head -1
promtool check rules chart/files/alerts.yaml
promtool test rules chart/files/alerts_test.yaml
