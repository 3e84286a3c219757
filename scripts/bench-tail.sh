#!/usr/bin/env bash
# The latency tail against the host: runs parley-bench's latency clusters (3 or 10 nodes, the
# issue's 500 writes/s) RUNS times and prints one row per run: the share of the host probe's runs
# the host slowed, Parley's p50 and p99, its p99 away from the slowed runs (quiet), its CPU per
# write, the floor's p99, the p99 of the floor with the design's rows and that of the floor at
# Parley's CPU (docs/BENCHMARKS.md, *The figures*). Then the runs grouped
# by that share, with the median p99 and how many met the target, in all and away from the
# slowed runs. On this machine the host runs the vCPUs slowly in episodes, and the tail follows
# them: one run says little, a dozen grouped this way say what the code does. Never part of the
# tests.
#
#   scripts/bench-tail.sh [NODES] [RUNS]     e.g. scripts/bench-tail.sh 3 12
#
# Set BENCH_BINARY to measure another parley binary (parley-bench --binary).
set -euo pipefail
cd "$(dirname "$0")/.."
SCRIPT=bench-tail
source scripts/bench-args.sh
nodes="${1:-10}"
runs="${2:-10}"
case "$nodes" in
3) target=2 ;;
10) target=15 ;;
*) echo "bench-tail: NODES must be 3 or 10, not '$nodes'" >&2; exit 2 ;;
esac
require_count RUNS "$runs" 200
require_bench
binary=()
[ -n "${BENCH_BINARY:-}" ] && binary=(--binary "$BENCH_BINARY")

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
printf '%-4s %16s %8s %8s %14s %14s %14s %16s %22s\n' run "host slowed %" "p50 ms" "p99 ms" "quiet p99 ms" "CPU ms/write" \
    "floor p99 ms" "design p99 ms" "floor at CPU p99 ms"
for run in $(seq 1 "$runs"); do
    out=$("$bench" --only "_${nodes}_nodes" "${binary[@]}" 2>&1) || { echo "$out" >&2; exit 1; }
    value() { echo "$out" | awk -v key="$1" '$1 == key { print $2; exit }'; }
    slowed=$(value "paced_host_slowed_percent_${nodes}_nodes")
    p99=$(value "latency_p99_ms_${nodes}_nodes")
    quiet=$(value "quiet_latency_p99_ms_${nodes}_nodes")
    printf '%-4s %16s %8s %8s %14s %14s %14s %16s %22s\n' "$run" "$slowed" "$(value "latency_p50_ms_${nodes}_nodes")" "$p99" \
        "$quiet" "$(value "paced_cpu_ms_per_write_${nodes}_nodes")" "$(value "floor_latency_p99_ms_${nodes}_nodes")" \
        "$(value "floor_design_latency_p99_ms_${nodes}_nodes")" "$(value "floor_at_parley_cpu_latency_p99_ms_${nodes}_nodes")"
    # A run without either figure (a cluster that failed to converge) is shown but not grouped.
    if [[ "$slowed" =~ ^[0-9.]+$ && "$p99" =~ ^[0-9.]+$ ]]; then echo "$slowed $p99 ${quiet:-nan}" >>"$rows"; fi
done

echo
echo "p99 by the share of the probe's runs the host slowed ($nodes nodes, target p99 <= $target ms):"
printf '%-14s %6s %14s %14s %16s\n' "host slowed" runs "median p99 ms" "met target" "quiet p99 met"
# Group number and p99 per run, sorted by group and then p99, so each group's median is its middle.
# The third column, the p99 away from the host's slowed runs (quiet_latency_p99_ms), counts how
# many runs met the target there.
awk '{ print ($1 < 1 ? 1 : $1 < 2 ? 2 : $1 < 3 ? 3 : $1 < 4 ? 4 : 5), $2, $3 }' "$rows" | sort -k1,1n -k2,2n | awk -v target="$target" '
    { n[$1]++; p[$1, n[$1]] = $2; if ($2 <= target) met[$1]++; if ($3 != "nan" && $3 <= target) quiet[$1]++ }
    END {
        split("under 1%|1-2%|2-3%|3-4%|4% and more", name, "|")
        for (g = 1; g <= 5; g++) {
            if (!n[g]) continue
            m = n[g] % 2 ? p[g, (n[g] + 1) / 2] : (p[g, n[g] / 2] + p[g, n[g] / 2 + 1]) / 2
            printf "%-14s %6d %14.1f %14s %16s\n", name[g], n[g], m, (met[g] + 0) " of " n[g], (quiet[g] + 0) " of " n[g]
        }
    }'
