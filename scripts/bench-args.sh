# Argument checks shared by the bench scripts (bench-tail, bench-edge, bench-ab); sourced, with
# SCRIPT set to the script's name (its errors and the make target it names).

# Exits 2 with a one-line error unless VALUE is a whole count from 1 to MAX.
require_count() { # NAME VALUE MAX
    if ! [[ "$2" =~ ^[0-9]+$ ]] || [ "$2" -lt 1 ] || [ "$2" -gt "$3" ]; then
        echo "$SCRIPT: $1 must be a count from 1 to $3, not '$2'" >&2
        exit 2
    fi
}

# Sets `bench` to the release parley-bench, or exits 1 naming the make target that builds it.
require_bench() {
    bench=.build/release/parley-bench
    [ -x "$bench" ] || { echo "$SCRIPT: $bench is missing; run it through 'make $SCRIPT', which builds it" >&2; exit 1; }
}
