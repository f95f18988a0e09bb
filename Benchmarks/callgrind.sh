#!/usr/bin/env bash
# Instructions per operation of the CPU-bound rows, LoopKit and its peer, counted by callgrind (`make
# bench-callgrind`). Each target (`LoopKitBenchmarks --callgrind-list`) runs under
# `valgrind --tool=callgrind` twice, for N and 2N operations; (I(2N) - I(N)) / N cancels the process's
# start-up and the target's set-up. Instruction counts (every thread's) do not move with the machine's
# load, so these figures repeat where the timed rows swing; they do not count time spent waiting or in
# the kernel.
#   BIN: the benchmark binary (default .build/release/LoopKitBenchmarks)
#   ONLY: run only the targets whose name contains this string
set -euo pipefail
cd "$(dirname "$0")"
# The same hash seed every run, so Set and Dictionary do the same work in the N and 2N runs.
export SWIFT_DETERMINISTIC_HASHING=1
BIN=${BIN:-.build/release/LoopKitBenchmarks}
ONLY=${ONLY:-}
command -v valgrind >/dev/null 2>&1 || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "$BIN not built: swift build -c release --product LoopKitBenchmarks" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Valgrind 3.19 cannot read the DWARF 5 debug info Swift 6 emits: count a copy without it.
objcopy --strip-debug "$BIN" "$out/LoopKitBenchmarks"

# instructions TARGET N: the instructions callgrind collected over the whole run of TARGET for N operations.
instructions() {
    local log="$out/log"
    valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" "$out/LoopKitBenchmarks" --callgrind "$1" "$2" \
        > /dev/null 2> "$log" || { cat "$log" >&2; echo "callgrind run of $1 $2 failed" >&2; exit 1; }
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log" | tail -1
}

echo "Instructions per operation (callgrind, (I(2N) - I(N)) / N); valgrind $(valgrind --version | sed 's/valgrind-//'), $(nproc) cores"
echo
printf '%-52s | %-34s | %9s | %14s | %s\n' "row" "side" "N" "instr/op" "side/LoopKit"
printf '%s\n' "-----------------------------------------------------|------------------------------------|-----------|----------------|-------------"
loopkit=""
previous_row=""
while IFS=$'\t' read -r name n row side; do
    [ -n "$ONLY" ] && [[ "$name" != *"$ONLY"* ]] && continue
    one=$(instructions "$name" "$n")
    two=$(instructions "$name" $((2 * n)))
    per=$(awk -v a="$one" -v b="$two" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')
    if [ "$row" != "$previous_row" ]; then loopkit=""; previous_row=$row; fi
    ratio="—"
    if [ "$side" = "LoopKit" ] || [[ "$side" == LoopKit* ]]; then
        loopkit=$per
    elif [ -n "$loopkit" ]; then
        ratio=$(awk -v p="$per" -v l="$loopkit" 'BEGIN { printf "%.2fx", p / l }')
    fi
    printf '%-52s | %-34s | %9d | %14s | %s\n' "$row" "$side" "$n" "$per" "$ratio"
done < <("$BIN" --callgrind-list)
