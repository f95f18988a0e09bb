#!/usr/bin/env bash
# The work pool and files (`make bench-pool`): LoopKit against SwiftNIO from the same process, alternated round
# by round (PoolBench; its header says how). Unpinned: the loop and the pool's two threads share the machine's
# cores as a server's would.
#   1. offload round trip of an empty closure (loop -> pool -> loop): loop.offload vs NIOThreadPool.runIfActive
#   2. a 1 GiB file read through the pool, page cache warm: FileSystem.chunks(of:) vs NIOFileSystem readChunks()
#   3. a 1M-item offload burst from loop.process: the loop's busy time per iteration against its 4 ms budget
#   POOL_BENCH: the release binary. ROUNDS (9), ROUND_TRIPS (20000), BENCH_FILE (/tmp/loopkit-pool-bench-1GiB,
#   created once, 1 GiB; removed at the end unless KEEP_FILE=1).
set -euo pipefail
ROUNDS=${ROUNDS:-9}
ROUND_TRIPS=${ROUND_TRIPS:-20000}
BENCH_FILE=${BENCH_FILE:-/tmp/loopkit-pool-bench-1GiB}
POOL_BENCH=${POOL_BENCH:-Benchmarks/.build/release/PoolBench}
started=$(date +%s)
timeout 1200 "$POOL_BENCH" --rounds "$ROUNDS" --round-trips "$ROUND_TRIPS" --file "$BENCH_FILE"
[ "${KEEP_FILE:-0}" = 1 ] || rm -f "$BENCH_FILE"
echo "($(( $(date +%s) - started )) s)"
