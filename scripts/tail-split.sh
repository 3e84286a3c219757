#!/usr/bin/env bash
# Where a latency tail is made: at the author or at the receivers. Reads the deliveries CSV that
# `parley-bench --deliveries PREFIX` writes (PREFIX_<n>_nodes.csv, or the floor's
# PREFIX_floor_<n>_nodes.csv: written_ms,author,receiver,latency_ms) and prints the p99, then
# splits the deliveries at or above it: "author-side" when even the op's fastest receiver took at
# least half as long (the op left its author late, so every receiver got it late), else
# "receiver-side" (that receiver was late). Then the tail per receiver and per author, to show
# whether one node makes it. Never part of the tests (docs/BENCHMARKS.md, *Reproducing*).
#
#   scripts/tail-split.sh /tmp/d/run_10_nodes.csv [more.csv ...]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/tail-split.sh DELIVERIES.csv [more.csv ...] (from parley-bench --deliveries PREFIX)" >&2; exit 2; }
for file in "$@"; do
    [ -r "$file" ] || { echo "tail-split: cannot read '$file'; pass the CSV parley-bench --deliveries wrote" >&2; exit 2; }
    head -1 "$file" | grep -q '^written_ms,author,receiver,latency_ms' ||
        { echo "tail-split: '$file' is not a deliveries CSV (its header is not written_ms,author,receiver,latency_ms)" >&2; exit 2; }
    p99=$(tail -n +2 "$file" | cut -d, -f4 | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; i = int(NR * 0.99) + 1; if (i > NR) i = NR; print v[i] }') ||
        { echo "tail-split: '$file' holds no deliveries" >&2; exit 2; }
    tail -n +2 "$file" | awk -F, -v p99="$p99" -v name="$file" '
        { op = $1 "," $2; n++; lat[n] = $4; key[n] = op; rcv[n] = $3; aut[n] = $2
          if (!(op in fastest) || $4 < fastest[op]) fastest[op] = $4 }
        END {
            for (i = 1; i <= n; i++) {
                if (lat[i] < p99) continue
                tail++; byReceiver[rcv[i]]++; byAuthor[aut[i]]++
                if (fastest[key[i]] * 2 >= lat[i]) authorSide++; else receiverSide++
            }
            printf "%s: %d deliveries, p99 %d ms; %d at or above it: %d author-side, %d receiver-side\n", name, n, p99, tail, authorSide, receiverSide
            line = "  per receiver:"; for (r = 0; r < 64; r++) if (r in byReceiver) line = line " " r "=" byReceiver[r]; print line
            line = "  per author:  "; for (a = 0; a < 64; a++) if (a in byAuthor) line = line " " a "=" byAuthor[a]; print line
        }'
done
