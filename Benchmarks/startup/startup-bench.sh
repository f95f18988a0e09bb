#!/usr/bin/env bash
# make bench-startup: a C host's start-up as a whole process (exec, load, create a loop, one iteration,
# destroy, exit) under hyperfine: LoopKit's self-contained libloopkit.so against the dynamic libLoopKitC.so
# and a libuv 1.44 host. ROUNDS rounds (default 5), the commands' order rotated each round,
# RUNS runs each (default 300, after 30 warm-up runs); the figure is the median of the rounds' medians,
# the ratios per round give the spread. A fourth host, openssl-load, is an empty main that NEEDs only libssl
# and libcrypto: what a library carrying TLS would pay at start-up (libloopkit paid it until TLS left LoopKitNet
# for LoopKitTLS), and a fifth, empty, the same main needing nothing: the process itself. Then CPU time and
# page faults (perf stat, where perf runs: on this VM the faults, not the instructions, are most of a small
# process's start-up), instructions per whole process (callgrind, ld.so included: repeatable on a loaded
# machine), the C ABI's hot paths on both builds (lk_hotpath.c: 1M enqueues, 100k zero-delay timers; 5 runs
# each, alternated, medians), and each library's stripped size and NEEDED count.
#   Benchmarks/startup/startup-bench.sh LIBLOOPKIT_DIR RELEASE_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
lib_dir=$1
release_dir=$2
rounds=${ROUNDS:-5}
runs=${RUNS:-300}
work=.build/bench-startup
mkdir -p "$work"
cflags="-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -ISources/CLoopKit/include"

cc $cflags -o "$work/loopkit-static" Benchmarks/startup/lk_startup.c -L"$lib_dir" -lloopkit -Wl,-rpath,"$(realpath "$lib_dir")"
cc $cflags -o "$work/loopkit-dynamic" Benchmarks/startup/lk_startup.c -L"$release_dir" -lLoopKitC -Wl,-rpath,"$(realpath "$release_dir")"
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$work/libuv" Benchmarks/startup/uv_startup.c $(pkg-config --cflags --libs libuv)
echo 'int main(void) { return 0; }' > "$work/empty.c"
cc -O2 -o "$work/openssl-load" "$work/empty.c" -Wl,--no-as-needed $(pkg-config --libs openssl)
cc -O2 -o "$work/empty" "$work/empty.c"
for host in loopkit-static loopkit-dynamic libuv openssl-load empty; do "$work/$host" || { echo "$host failed"; exit 1; }; done

echo "bench-startup: $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; libuv $(pkg-config --modversion libuv)"
echo "whole process: create a loop, one iteration without waiting, destroy; hyperfine -N, $runs runs x $rounds rounds"
order=(loopkit-static loopkit-dynamic libuv openssl-load empty)
for round in $(seq 1 "$rounds"); do
    args=()
    for host in "${order[@]}"; do args+=("$work/$host"); done
    hyperfine -N --warmup 30 --runs "$runs" --export-json "$work/round-$round.json" --style none "${args[@]}" > /dev/null 2>&1
    order=("${order[@]:1}" "${order[0]}")
done

python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
medians = {}
for r in range(1, rounds + 1):
    for result in json.load(open(f"{work}/round-{r}.json"))["results"]:
        name = result["command"].rsplit("/", 1)[-1]
        medians.setdefault(name, []).append(result["median"] * 1e6)
uv = medians["libuv"]
for name in ["loopkit-static", "loopkit-dynamic", "libuv", "openssl-load", "empty"]:
    m = medians[name]
    ratios = [a / b for a, b in zip(m, uv)]
    print(f"  {name:16s} median {statistics.median(m):8.0f} us  (rounds {min(m):.0f}-{max(m):.0f})"
          f"  x libuv {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
static = statistics.median([a / b for a, b in zip(medians["loopkit-static"], uv)])
print(f"  goal: static <= 2x libuv: {'met' if static <= 2 else 'MISSED'} ({static:.2f}x)")
PY

if perf stat -e task-clock true > /dev/null 2>&1; then
    echo "CPU time and page faults per whole process (perf stat -r 300; mean):"
    for host in loopkit-static loopkit-dynamic libuv openssl-load empty; do
        perf stat -x, -r 300 -e task-clock,page-faults "$work/$host" 2>&1 > /dev/null |
            awk -F, -v h="$host" '$3 == "task-clock" { t = $1 } $3 == "page-faults" { f = $1 }
                END { printf "  %-16s %6.2f ms CPU  %4d page faults\n", h, t, f }'
    done
else
    echo "(perf stat refused here: no CPU time and page-fault figures)"
fi
echo "instructions per whole process (callgrind):"
for host in loopkit-static loopkit-dynamic libuv openssl-load empty; do
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/$host" 2>&1 |
        sed -n "s/.*Collected : *\([0-9]*\).*/\1/p" | awk -v h="$host" '{ printf "  %-16s %10d\n", h, $1 }'
done
cc $cflags -o "$work/hotpath-static" Benchmarks/startup/lk_hotpath.c -L"$lib_dir" -lloopkit -Wl,-rpath,"$(realpath "$lib_dir")"
cc $cflags -o "$work/hotpath-dynamic" Benchmarks/startup/lk_hotpath.c -L"$release_dir" -lLoopKitC -Wl,-rpath,"$(realpath "$release_dir")"
: > "$work/hotpath.txt"
for run in 1 2 3 4 5; do
    for build in static dynamic; do echo "$build $("$work/hotpath-$build")" >> "$work/hotpath.txt"; done
done
echo "C ABI hot paths, ns per operation (median of 5 alternated runs; min-max):"
python3 - "$work/hotpath.txt" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for build in ("static", "dynamic"):
    enqueue = [float(r[1]) for r in rows if r[0] == build]
    timers = [float(r[2]) for r in rows if r[0] == build]
    print(f"  {build:8s} lk_loop_enqueue + run {statistics.median(enqueue):6.1f} ({min(enqueue):.1f}-{max(enqueue):.1f})"
          f"   lk_timer_start + fire {statistics.median(timers):6.1f} ({min(timers):.1f}-{max(timers):.1f})")
PY
echo "libraries (stripped size, NEEDED entries):"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
uv_libdir=$(pkg-config --variable=libdir libuv)
event_libdir=$(pkg-config --variable=libdir libevent)
for lib in "$lib_dir"/libloopkit.so.*.*.* "$release_dir/libLoopKitC.so" "$uv_libdir/libuv.so.1" \
           "$event_libdir/libevent-2.1.so.7" "$event_libdir/libevent_core-2.1.so.7"; do
    real=$(readlink -f "$lib")
    strip --strip-unneeded -o "$tmp/lib" "$real"
    needed=$(readelf -d "$real" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    printf "  %-34s %10s bytes  NEEDED %2d: %s\n" "$(basename "$real")" "$(stat -c %s "$tmp/lib")" \
        "$(echo "$needed" | grep -c .)" "$(echo $needed)"
done
