#!/usr/bin/env bash
# Latency and CPU against the pace: runs parley-bench's latency cluster (3 or 10 nodes) at each
# pace in turn and prints one row per pace, with the floor cluster's p99 and CPU per write at the
# same pace (docs/BENCHMARKS.md, *The figures*). Shows the pace at which the cluster leaves the
# targets' range on this machine. Never part of the tests.
#
#   scripts/bench-sweep.sh [NODES] [PACE...]     e.g. scripts/bench-sweep.sh 10 50 100 200 300 400 500
#
# Set BENCH_BINARY to measure another parley binary (parley-bench --binary).
set -euo pipefail
cd "$(dirname "$0")/.."
nodes="${1:-10}"
shift || true
paces=("$@")
if [ ${#paces[@]} -eq 0 ]; then paces=(50 100 200 300 400 500); fi
case "$nodes" in
3 | 10) ;;
*) echo "bench-sweep: NODES must be 3 or 10, not '$nodes'" >&2; exit 2 ;;
esac
for pace in "${paces[@]}"; do
    if ! [[ "$pace" =~ ^[0-9]+$ ]] || [ "$pace" -lt 1 ] || [ "$pace" -gt 5000 ]; then
        echo "bench-sweep: each PACE must be writes per second from 1 to 5000, not '$pace'" >&2
        exit 2
    fi
done
bench=.build/release/parley-bench
[ -x "$bench" ] || { echo "bench-sweep: $bench is missing; run it through 'make bench-sweep', which builds it" >&2; exit 1; }
binary=()
[ -n "${BENCH_BINARY:-}" ] && binary=(--binary "$BENCH_BINARY")

printf '%-6s %12s %8s %8s %12s %8s %12s %14s %18s\n' nodes "pace (w/s)" "p50 ms" "p99 ms" "achieved w/s" cores "CPU ms/write" \
    "floor p99 ms" "floor CPU ms/write"
for pace in "${paces[@]}"; do
    out=$("$bench" --only "_${nodes}_nodes" --pace "$pace" "${binary[@]}" 2>&1) || { echo "$out" >&2; exit 1; }
    value() { echo "$out" | awk -v key="$1" '$1 == key { print $2; exit }'; }
    printf '%-6s %12s %8s %8s %12s %8s %12s %14s %18s\n' "$nodes" "$pace" "$(value "latency_p50_ms_${nodes}_nodes")" \
        "$(value "latency_p99_ms_${nodes}_nodes")" "$(value "paced_writes_per_s_${nodes}_nodes")" \
        "$(value "paced_cpu_cores_${nodes}_nodes")" "$(value "paced_cpu_ms_per_write_${nodes}_nodes")" \
        "$(value "floor_latency_p99_ms_${nodes}_nodes")" "$(value "floor_cpu_ms_per_write_${nodes}_nodes")"
done
