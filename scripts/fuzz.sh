#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/Sources/parley-fuzz) in .build/fuzz and runs each for a
# bounded time: `scripts/fuzz.sh SECONDS [TARGET...]` (what `make fuzz` calls).
#
# The seed corpus of each target is Fuzz/corpus/TARGET (committed, read only here); what the
# fuzzer learns goes to .build/fuzz/corpus/TARGET; a crash is saved as Fuzz/crashes/TARGET-*
# and fails the run. The normal build never sees any of this: the target exists only when
# PARLEY_FUZZ is set (Package.swift), and it builds in its own build path.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
shift || true
all=(beacon handshake frame sync link op body peers addresses archive web)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# libFuzzer without its main(): SwiftPM gives every Linux executable a main of its own, so the
# binary calls LLVMFuzzerRunDriver itself. -sanitize=fuzzer would link libFuzzer's main too.
swiftc=$(readlink -f "$(command -v swiftc)")
runtime=$(ls "$(dirname "$swiftc")"/../lib/swift/clang/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a 2>/dev/null | head -1)
[ -n "$runtime" ] || { echo "fuzz: libclang_rt.fuzzer_no_main not found beside $swiftc" >&2; exit 1; }

PARLEY_FUZZ=1 swift build --manifest-cache none --build-path .build/fuzz --product parley-fuzz \
    -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp,indirect-calls \
    -Xswiftc -enable-testing -Xlinker "$runtime" -Xlinker -lstdc++ 2>&1 | grep -v "Cannot export local symbol" || true
binary=.build/fuzz/debug/parley-fuzz
[ -x "$binary" ] || { echo "fuzz: the build failed" >&2; exit 1; }

mkdir -p Fuzz/crashes
failed=()
printf '%-10s %8s %12s %10s %s\n' target seconds executions exec/s result > .build/fuzz/summary.txt
for target in "${targets[@]}"; do
    [ -d "Fuzz/corpus/$target" ] || { echo "fuzz: no target '$target' (one of: ${all[*]})" >&2; exit 1; }
    mkdir -p ".build/fuzz/corpus/$target"
    log=".build/fuzz/$target.log"
    echo "== $target: ${seconds}s"
    # Messages that may reach 64 KiB (ops) or 1 MiB (sync) get room to grow; the rest stay small.
    case $target in sync | op | archive) max_len=70000 ;; *) max_len=4096 ;; esac
    status=0
    # Swift's own backtracer would race AddressSanitizer's report; libFuzzer prints the stack.
    SWIFT_BACKTRACE=enable=no PARLEY_FUZZ_TARGET=$target "$binary" ".build/fuzz/corpus/$target" "Fuzz/corpus/$target" \
        -max_total_time="$seconds" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="Fuzz/crashes/$target-" >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    result=ok
    if [ "$status" -ne 0 ]; then
        result="CRASH (see $log, Fuzz/crashes/$target-*)"
        failed+=("$target")
        grep -m5 -E "invariant|Fatal error|ERROR: |SUMMARY" "$log" || true
    fi
    printf '%-10s %8s %12s %10s %s\n' "$target" "$seconds" "${runs:-?}" "${rate:-?}" "$result" | tee -a .build/fuzz/summary.txt
done
echo
cat .build/fuzz/summary.txt
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: crashes in ${failed[*]}" >&2; exit 1; }
