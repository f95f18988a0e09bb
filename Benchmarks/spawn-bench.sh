#!/usr/bin/env bash
# Spawn and wait for /bin/true N times (1,000), one after another, on one core (`make bench-spawn`): LoopKit's
# ChildProcess (posix_spawn, exit by pidfd on the loop) against Foundation's Process (waitUntilExit) and libuv
# 1.44's uv_spawn (Debian's libuv1-dev). Each pinned to core 0 (SERVER_CORE), rounds alternated (ROUNDS, 5).
set -euo pipefail
ROUNDS=${ROUNDS:-5}
N=${N:-1000}
BIN=${BIN:-Benchmarks/.build/release}
here=$(dirname "$0")
# shellcheck source=bench-lib.sh
source "$here/bench-lib.sh"
echo "spawn + wait /bin/true x$N, $ROUNDS rounds, pinned to core $SERVER_CORE"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
lk=(); fd=(); uv=()
for round in $(seq 1 "$ROUNDS"); do
    order=(lk fd uv)
    (( round % 2 == 0 )) && order=(uv fd lk)
    for who in "${order[@]}"; do
        case $who in
            lk) lk+=("$(taskset -c "$SERVER_CORE" "$BIN/SpawnBench" loopkit "$N" | awk '{print $2}')") ;;
            fd) fd+=("$(taskset -c "$SERVER_CORE" "$BIN/SpawnBench" foundation "$N" | awk '{print $2}')") ;;
            uv) uv+=("$(taskset -c "$SERVER_CORE" "$BIN/UVSpawnBench" "$N" | awk '{print $2}')") ;;
        esac
    done
    echo "  round $round: LoopKit ${lk[-1]}, Foundation ${fd[-1]}, libuv ${uv[-1]} spawns/s"
done
printf 'LoopKit     median %s spawns/s\n' "$(printf '%s\n' "${lk[@]}" | median)"
printf 'Foundation  median %s spawns/s\n' "$(printf '%s\n' "${fd[@]}" | median)"
printf 'libuv       median %s spawns/s\n' "$(printf '%s\n' "${uv[@]}" | median)"
printf 'LoopKit / Foundation %s (median of per-round ratios, min-max)\n' "$(ratio_summary lk fd)"
printf 'LoopKit / libuv      %s (median of per-round ratios, min-max)\n' "$(ratio_summary lk uv)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
