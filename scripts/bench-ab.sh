#!/usr/bin/env bash
# Two builds of parley compared the way docs/BENCHMARKS.md asks a change to the write path to be
# compared: the paced latency cluster (3 or 10 nodes, 500 writes/s) run with binary A, then B,
# alternated, ROUNDS times, so the host's drift falls on both alike. Prints one row per run (the
# host's slowed share, CPU per write, the p99 away from the host's slowed runs) and per binary
# the CPU per write's mean and median, with how many pairs B spent less than A. CPU per write is
# the figure to read: the host moves it far less than the tail. The p99 over all deliveries is
# left out, because asking for it also runs the floor cluster, which doubles the time. Never
# part of the tests.
#
#   scripts/bench-ab.sh A B [NODES] [ROUNDS]     e.g. scripts/bench-ab.sh /tmp/parley-old .build/release/parley 3 6
set -euo pipefail
cd "$(dirname "$0")/.."
SCRIPT=bench-ab
source scripts/bench-args.sh
usage="usage: scripts/bench-ab.sh A B [NODES] [ROUNDS] (A and B: parley binaries; or make bench-ab A=… B=…)"
[ $# -ge 2 ] && [ -n "$1" ] && [ -n "$2" ] || { echo "bench-ab: two parley binaries to compare are needed; $usage" >&2; exit 2; }
binaries=("$1" "$2")
nodes="${3:-3}"
rounds="${4:-5}"
for binary in "${binaries[@]}"; do
    [ -x "$binary" ] || { echo "bench-ab: '$binary' is not an executable file; give the paths of two parley binaries" >&2; exit 2; }
done
case "$nodes" in
3 | 10) ;;
*) echo "bench-ab: NODES must be 3 or 10, not '$nodes'" >&2; exit 2 ;;
esac
require_count ROUNDS "$rounds" 50
require_bench

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
keys="paced_cpu_ms_per_write_${nodes},paced_host_slowed_percent_${nodes},quiet_latency_p99_ms_${nodes}"
printf '%-6s %-4s %16s %14s %14s\n' round bin "host slowed %" "CPU ms/write" "quiet p99 ms"
for round in $(seq 1 "$rounds"); do
    for side in A B; do
        binary=${binaries[0]}
        [ "$side" = A ] || binary=${binaries[1]}
        out=$("$bench" --only "$keys" --binary "$binary" 2>&1) || { echo "$out" >&2; exit 1; }
        value() { echo "$out" | awk -v key="$1" '$1 == key { print $2; exit }'; }
        cpu=$(value "paced_cpu_ms_per_write_${nodes}_nodes")
        printf '%-6s %-4s %16s %14s %14s\n' "$round" "$side" "$(value "paced_host_slowed_percent_${nodes}_nodes")" "$cpu" \
            "$(value "quiet_latency_p99_ms_${nodes}_nodes")"
        if [[ "$cpu" =~ ^[0-9.]+$ ]]; then echo "$round $side $cpu" >>"$rows"; fi
    done
done

echo
echo "CPU per write ($nodes nodes), A = ${binaries[0]}, B = ${binaries[1]}:"
awk '
    { cpu[$2] = cpu[$2] (cpu[$2] == "" ? "" : " ") $3; at[$1, $2] = $3; n[$2]++; sum[$2] += $3 }
    function median(list,    values, count, i, j, t) {
        count = split(list, values, " ")
        for (i = 2; i <= count; i++) for (j = i; j > 1 && values[j - 1] + 0 > values[j] + 0; j--) { t = values[j]; values[j] = values[j - 1]; values[j - 1] = t }
        return count % 2 ? values[(count + 1) / 2] : (values[count / 2] + values[count / 2 + 1]) / 2
    }
    END {
        for (side = 1; side <= 2; side++) {
            s = side == 1 ? "A" : "B"
            if (n[s]) printf "  %s: %s ms; mean %.3f, median %.3f\n", s, cpu[s], sum[s] / n[s], median(cpu[s])
        }
        for (key in at) { split(key, parts, SUBSEP); if (parts[2] == "A" && ((parts[1], "B") in at)) { pairs++; if (at[parts[1], "B"] < at[key]) lower++ } }
        if (n["A"] && n["B"]) printf "  B against A: %+.1f%% at the mean; B spent less in %d of %d pairs\n", 100 * (sum["B"] / n["B"] / (sum["A"] / n["A"]) - 1), lower, pairs
    }' "$rows"
