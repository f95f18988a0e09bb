#!/usr/bin/env bash
# Instructions per request and per MiB downloaded, LoopKitHTTPClient (curl's engine and its own) against AsyncHTTPClient, counted by callgrind
# in the client process (`make bench-client-callgrind`). ClientBench runs under `valgrind --tool=callgrind`, the
# server (`LoopDemo serve`, not under valgrind) pinned to SERVER_CORE:
#   1. 64 concurrent keep-alive GET /hello (ClientBench --mode hello): N requests, then 2N; (I(2N) - I(N)) / N is
#      one request with start-up, the warm-up and shutdown cancelled. Heap allocations (malloc, calloc, realloc,
#      posix_memalign) likewise. LoopKit's count is split by the object the instructions ran in: libcurl,
#      libc (malloc, memcpy, ... called from anywhere), the Swift runtime, and LoopKit's own code (the rest).
#   2. One GET of a file of M MiB, then 2M MiB (random bytes): instructions per MiB.
# Under valgrind a client runs far slower than the server, so its reads are whatever the socket holds then: the
# download's figure counts the per-byte cost (the copies) and the per-chunk cost at valgrind's chunk sizes.
# Instruction counts do not move with the machine's load.
#   LOOPDEMO, CLIENT: the release binaries.  N (3000), M (64).  PORT (18760).  CLIENTS ("loopkit loopkit-own ahc":
#   LoopKitHTTPClient on curl's engine, on its own HTTP/1.1 engine, AsyncHTTPClient).
#   LOOPKIT_ARGS: more ClientBench options for LoopKit's runs (`--observe`: with Configuration.requestEnded set).
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/bench-lib.sh
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
CLIENT=${CLIENT:-Benchmarks/.build/release/ClientBench}
N=${N:-3000}
M=${M:-64}
PORT=${PORT:-18760}
CLIENTS=${CLIENTS:-loopkit loopkit-own ahc}
LOOPKIT_ARGS=${LOOPKIT_ARGS:-}
export SWIFT_DETERMINISTIC_HASHING=1
for tool in valgrind callgrind_annotate objcopy; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found" >&2; exit 1; }
done
work=$(mktemp -d /tmp/loopkit-client-callgrind.XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT
# Valgrind 3.19 cannot read the DWARF 5 debug info Swift 6 emits: count a copy without it.
objcopy --strip-debug "$CLIENT" "$work/ClientBench"

# profile ARGS...: ClientBench ARGS under callgrind against the server on PORT; prints "instructions allocations
# libcurl libc swift loopkit" (the last four: instructions by object, self cost).
profile() {
    local file="$work/callgrind.out"
    rm -f "$file"
    taskset -c "$CLIENT_CORE" valgrind --tool=callgrind --callgrind-out-file="$file" "$work/ClientBench" --port "$PORT" "$@" \
        > "$work/out" 2> "$work/log"
    case $(cat "$work/out") in failed*|"") echo "ClientBench $*: $(cat "$work/out")" >&2; exit 1 ;; esac
    local instructions allocations
    instructions=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/log" | tail -1)
    allocations=$(awk '
        /^c?fn=/ { s = $0; iscall = (substr(s, 1, 1) == "c"); sub(/^c?fn=/, "", s); id = s; sub(/ .*/, "", id)
                  name = s; sub(/^\([0-9]+\) ?/, "", name)
                  if (name != "") names[id] = name; if (iscall) current = names[id]; next }
        /^calls=/ { n = $0; sub(/^calls=/, "", n); sub(/ .*/, "", n); calls[current] += n; next }
        END {
            for (f in calls) {
                base = f; sub(/[\047][0-9]+$/, "", base)
                if (base ~ /^(malloc|calloc|realloc|posix_memalign|aligned_alloc)$/) a += calls[f]
            }
            printf "%d\n", a
        }' "$file")
    callgrind_annotate --threshold=100 "$file" 2>/dev/null | awk -v ins="$instructions" -v allocs="$allocations" '
        /^ *[0-9,]+ \(/ && !/PROGRAM TOTALS/ {
            n = $1; gsub(/,/, "", n)
            if ($0 ~ /libcurl/) curl += n
            else if ($0 ~ /\/libc\.so|\/ld-linux|%\)  \.\//) libc += n  # glibc sources are named ./malloc/...
            else if ($0 ~ /libswift|\/opt\/swift/) swift += n
            else own += n
        }
        END { printf "%s %s %.0f %.0f %.0f %.0f\n", ins, allocs, curl, libc, swift, own }'
}

echo "ClientBench under callgrind (the client process only; LoopDemo serve natively on core $SERVER_CORE), (I(2X) - I(X)) / X; valgrind $(valgrind --version | sed 's/valgrind-//'), $(curl --version | head -1 | cut -d' ' -f1-2)"
echo
echo "64 concurrent keep-alive GET /hello, per request (N = $N)"
printf '  %-22s | %12s | %8s | %9s | %9s | %9s | %9s\n' "client" "instructions" "allocs" "libcurl" "libc" "Swift rt" "own code"
start "$PORT" "$LOOPDEMO" serve --log-level warning
for who in $CLIENTS; do
    extra=(); [ "$who" = loopkit ] && extra=($LOOPKIT_ARGS)
    read -r i1 a1 c1 l1 s1 o1 < <(profile --client "$who" --mode hello --count "$N" --concurrency 64 "${extra[@]}")
    read -r i2 a2 c2 l2 s2 o2 < <(profile --client "$who" --mode hello --count $((2 * N)) --concurrency 64 "${extra[@]}")
    case $who in loopkit) label="LoopKit curl engine" ;; loopkit-own) label="LoopKit own engine" ;; *) label="AsyncHTTPClient" ;; esac
    awk -v l="$label" -v n="$N" -v i1="$i1" -v i2="$i2" -v a1="$a1" -v a2="$a2" -v c1="$c1" -v c2="$c2" \
        -v l1="$l1" -v l2="$l2" -v s1="$s1" -v s2="$s2" -v o1="$o1" -v o2="$o2" 'BEGIN {
        printf "  %-22s | %12.0f | %8.1f | %9.0f | %9.0f | %9.0f | %9.0f\n", l, (i2 - i1) / n, (a2 - a1) / n,
            (c2 - c1) / n, (l2 - l1) / n, (s2 - s1) / n, (o2 - o1) / n }'
done
cleanup

echo
echo "One GET of a file (random bytes, page cache warm), per MiB (M = $M MiB)"
printf '  %-22s | %12s | %8s\n' "client" "instructions" "allocs"
mkdir -p "$work/root"
head -c $((2 * M << 20)) /dev/urandom > "$work/root/double.bin"
head -c $((M << 20)) "$work/root/double.bin" > "$work/root/single.bin"
start "$PORT" "$LOOPDEMO" serve --log-level warning --root "$work/root"
for who in $CLIENTS; do
    extra=(); [ "$who" = loopkit ] && extra=($LOOPKIT_ARGS)
    read -r i1 a1 _ < <(profile --client "$who" --mode download --path /files/single.bin "${extra[@]}")
    read -r i2 a2 _ < <(profile --client "$who" --mode download --path /files/double.bin "${extra[@]}")
    case $who in loopkit) label="LoopKit curl engine" ;; loopkit-own) label="LoopKit own engine" ;; *) label="AsyncHTTPClient" ;; esac
    awk -v l="$label" -v m="$M" -v i1="$i1" -v i2="$i2" -v a1="$a1" -v a2="$a2" 'BEGIN {
        printf "  %-22s | %12.0f | %8.1f\n", l, (i2 - i1) / m, (a2 - a1) / m }'
done
cleanup
