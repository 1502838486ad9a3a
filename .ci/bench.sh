#!/usr/bin/env bash
# make bench: times a whole sync of the realistic request against json.Valid
# of the same bytes, in one `go test` run, then loads `asya-sync serve` at
# 8 concurrent clients. Prints one Markdown table. Needs the RabbitMQ of
# .ci/services.sh (the first sync ensures the actor's queue).
# Each benchmark runs COUNT times and the table keeps its fastest run, the
# one least disturbed by anything else on the machine. BENCHTIME, COUNT
# and LOAD_SECONDS shorten or lengthen the run.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
BENCHTIME=${BENCHTIME:-1s}
COUNT=${COUNT:-5}
LOAD_SECONDS=${LOAD_SECONDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

$GO test -run '^$' -bench '^Benchmark(JSONValid|Sync|HTTPSync)$/realistic' -benchmem -benchtime "$BENCHTIME" -count "$COUNT" \
  ./cmd/asya-sync/ >"$work/bench.txt"
CGO_ENABLED=0 $GO build -trimpath -o "$work/asya-sync" ./cmd/asya-sync
$GO build -o "$work/load" ./bench/load

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $($GO version | cut -d' ' -f3-), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
awk -v count="$COUNT" '
  /^Benchmark/ {
    name=$1; sub(/-[0-9]+$/, "", name)
    if (!(name in ns)) order[++n]=name
    for (i = 3; i <= NF; i++) if ($i == "ns/op") t=$(i-1)
    if (name in ns && ns[name] <= t) next
    ns[name]=t
    for (i = 3; i <= NF; i++) {
      if ($i == "B/op") b[name]=$(i-1)
      if ($i == "allocs/op") a[name]=$(i-1)
    }
  }
  END {
    floor = ns["BenchmarkJSONValid/realistic"]
    print "| benchmark (realistic request), fastest of " count " | time/op | × json.Valid | bytes/op | allocs/op |"
    print "|---|---|---|---|---|"
    for (i = 1; i <= n; i++) {
      k = order[i]
      printf "| %s | %.3f ms | %.2f | %d | %d |\n", k, ns[k]/1e6, ns[k]/floor, b[k], a[k]
    }
  }' "$work/bench.txt"
echo
"$work/load" -bin "$work/asya-sync" -d "${LOAD_SECONDS}s" -header
"$work/load" -bin "$work/asya-sync" -d "${LOAD_SECONDS}s" -etag
