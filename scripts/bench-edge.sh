#!/usr/bin/env bash
# The CPU per write a latency target allows on this machine: runs parley-bench's floor cluster
# (3 or 10 nodes, the issue's 500 writes/s) made to spend each of EXTRA milliseconds more per
# write (--floor-extra-ms), the levels alternated, ROUNDS times, and prints one row per run (the
# host's slowed share, the CPU per write, p50, p99). Then one row per level: its CPU per write,
# its p99s and how many met the target. The highest CPU per write whose runs all met it is what
# a replica may cost here (docs/BENCHMARKS.md, *Reproducing*). Compare Parley's
# paced_cpu_ms_per_write from `make bench-tail`. Never part of the tests.
#
#   scripts/bench-edge.sh [NODES] [ROUNDS] [EXTRA_MS...]     e.g. scripts/bench-edge.sh 3 5 0 0.1 0.2 0.3
set -euo pipefail
cd "$(dirname "$0")/.."
SCRIPT=bench-edge
source scripts/bench-args.sh
nodes="${1:-3}"
rounds="${2:-5}"
shift 2 || shift $#
levels=("$@")
case "$nodes" in
3) target=2; [ ${#levels[@]} -gt 0 ] || levels=(0 0.1 0.2 0.3 0.4 0.5) ;;
10) target=15; [ ${#levels[@]} -gt 0 ] || levels=(0 0.5 1 1.5) ;;
*) echo "bench-edge: NODES must be 3 or 10, not '$nodes'" >&2; exit 2 ;;
esac
require_count ROUNDS "$rounds" 50
for level in "${levels[@]}"; do
    if ! [[ "$level" =~ ^[0-9]+(\.[0-9]+)?$ ]] || awk -v x="$level" 'BEGIN { exit !(x > 20) }'; then
        echo "bench-edge: each EXTRA_MS must be milliseconds from 0 to 20, such as 0.25, not '$level'" >&2
        exit 2
    fi
done
require_bench

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
keys="floor_latency_p50_ms_${nodes},floor_latency_p99_ms_${nodes},floor_cpu_ms_per_write_${nodes},floor_host_slowed_percent_${nodes}"
printf '%-6s %10s %16s %14s %8s %8s\n' round "extra ms" "host slowed %" "CPU ms/write" "p50 ms" "p99 ms"
for round in $(seq 1 "$rounds"); do
    for level in "${levels[@]}"; do
        out=$("$bench" --only "$keys" --floor-extra-ms "$level" 2>&1) || { echo "$out" >&2; exit 1; }
        value() { echo "$out" | awk -v key="$1" '$1 == key { print $2; exit }'; }
        cpu=$(value "floor_cpu_ms_per_write_${nodes}_nodes")
        p99=$(value "floor_latency_p99_ms_${nodes}_nodes")
        printf '%-6s %10s %16s %14s %8s %8s\n' "$round" "$level" "$(value "floor_host_slowed_percent_${nodes}_nodes")" "$cpu" \
            "$(value "floor_latency_p50_ms_${nodes}_nodes")" "$p99"
        if [[ "$cpu" =~ ^[0-9.]+$ && "$p99" =~ ^[0-9.]+$ ]]; then echo "$level $cpu $p99" >>"$rows"; fi
    done
done

echo
echo "the floor's p99 by its CPU per write ($nodes nodes, target p99 <= $target ms):"
printf '%-10s %20s %-40s %12s\n' "extra ms" "CPU ms/write" "p99 ms" "met target"
# Levels in the order given; for each, the range of CPU per write, the p99s and the count met.
for level in "${levels[@]}"; do
    awk -v level="$level" -v target="$target" '
        $1 == level {
            n++; if (n == 1 || $2 < low) low = $2; if (n == 1 || $2 > high) high = $2
            p = p (n > 1 ? ", " : "") $3; if ($3 <= target) met++
        }
        END { if (n) printf "%-10s %20s %-40s %12s\n", level, sprintf("%.2f-%.2f", low, high), p, (met + 0) " of " n }' "$rows"
done
