#!/usr/bin/env bash
# LoopKitHTTP against a minimal NIOHTTP1 server and Hummingbird 2, in one run (`make bench-http`).
# Each server is started on its own port, pinned to core 0 (taskset -c 0); wrk runs pinned to core 1
# with the same settings; one server at a time, servers alternated round by round (ROUNDS, default 5).
# nginx (Debian's, one process, `return 200`; Benchmarks/nginx-peer.sh) runs in the same rounds as the C anchor.
#   LOOPDEMO, NIO_PEER, HB_PEER: the three release binaries.  DURATION: wrk's -d (default 10s).
set -euo pipefail
DURATION=${DURATION:-5s}
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
NIO_PEER=${NIO_PEER:-Benchmarks/.build/release/NIOHTTPPeer}
HB_PEER=${HB_PEER:-Benchmarks/.build/release/HummingbirdPeer}
NGINX_PEER=${NGINX_PEER:-$(dirname "$0")/nginx-peer.sh}
PORT_BASE=${PORT_BASE:-18400}
# shellcheck source=bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

# wrk_row NAME URL [extra wrk args]: prints "NAME  requests/s  p99  server CPU per request  server core busy".
# The CPU columns tell a server that is the bottleneck (core near 100%) from one waiting on wrk.
wrk_row() {
    local name=$1 url=$2; shift 2
    local before after out
    before=$(cpu_ticks)
    out=$(taskset -c "$CLIENT_CORE" wrk -t1 -c64 -d"$DURATION" --latency "$@" "$url")
    after=$(cpu_ticks)
    local rps p99 requests seconds
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<< "$out")
    p99=$(awk '$1 == "99%" {print $2}' <<< "$out")
    requests=$(awk '/requests in/ {print $1}' <<< "$out")
    seconds=${DURATION%s}
    awk -v name="$name" -v rps="$rps" -v p99="$p99" -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" \
        -v requests="$requests" -v seconds="$seconds" 'BEGIN {
        cpu = ticks / hz
        printf "  %-36s %12s req/s   p99 %9s   server CPU %5.1f us/req, core %3.0f%% busy\n",
            name, rps, p99, (requests > 0 ? cpu / requests * 1e6 : 0), cpu / seconds * 100 }'
}

# responsiveness NAME: p99 of /hello while 4 clients loop on /work?items=1000000 (server already started).
responsiveness_row() {
    local name=$1 port=$2
    taskset -c "$CLIENT_CORE" wrk -t1 -c4 -d"$(( ${DURATION%s} + 4 ))s" --timeout 60s "http://127.0.0.1:$port/work?items=1000000" > /dev/null &
    local load=$!
    sleep 1
    wrk_row "$name" "http://127.0.0.1:$port/hello" --timeout 30s
    wait "$load" || true
}

# rps_of NAME-OF-VARIABLE-PREFIX: helpers for alternated rounds. round_rps PORT-OFFSET URL-PATH [wrk args] SERVER...
# runs one server, one wrk run, prints req/s only.
round_rps() {
    local port=$1 path=$2; shift 2
    local extra=()
    while [ "$1" != "--" ]; do extra+=("$1"); shift; done; shift
    start "$port" "$@"
    taskset -c "$CLIENT_CORE" wrk -t1 -c64 -d"$DURATION" "${extra[@]}" "http://127.0.0.1:$port$path" | awk '/^Requests\/sec:/ {print $2}'
    cleanup
}

# alternated NAME WRK-ARGS... -- : ROUNDS rounds of LoopKit (warning), LoopKit (info, its log in a file),
# LoopKit with --metrics (loop and HTTP metrics recorded into Prometheus; request ids are always on), NIO,
# Hummingbird, one after another in each round; prints medians, and the median of the per-round ratios to
# NIO with their min-max.
alternated() {
    local title=$1; shift
    local args=("$@")
    local lk=() lki=() lkm=() nio=() hb=() ngx=()
    for round in $(seq 1 "$ROUNDS"); do
        lk+=("$(round_rps $((PORT_BASE + 1)) /hello "${args[@]}" -- "$LOOPDEMO" serve --log-level warning)")
        lki+=("$(LOG=/tmp/loopkit-bench-access.log; round_rps $((PORT_BASE + 2)) /hello "${args[@]}" -- sh -c "exec \"$LOOPDEMO\" serve --log-level info --port \"\$1\" 2>$LOG" sh)")
        lkm+=("$(round_rps $((PORT_BASE + 5)) /hello "${args[@]}" -- "$LOOPDEMO" serve --log-level warning --metrics 0)")
        nio+=("$(round_rps $((PORT_BASE + 3)) /hello "${args[@]}" -- "$NIO_PEER")")
        hb+=("$(round_rps $((PORT_BASE + 4)) /hello "${args[@]}" -- "$HB_PEER")")
        ngx+=("$(round_rps $((PORT_BASE + 6)) /hello "${args[@]}" -- sh "$NGINX_PEER")")
    done
    echo "$title ($ROUNDS alternated rounds of $DURATION; median req/s; ratio = median of per-round ratios, min-max)"
    for who in lk lki lkm nio hb ngx; do
        local -n values=$who
        local label
        case $who in
            lk) label="LoopKitHTTP (1 loop), log at warning" ;;
            lki) label="LoopKitHTTP (1 loop), access log at info" ;;
            lkm) label="LoopKitHTTP, metrics + request ids (--metrics)" ;;
            nio) label="NIOHTTP1 (1 event loop)" ;;
            hb) label="Hummingbird 2 (1 event loop)" ;;
            ngx) label="nginx (1 process, return 200)" ;;
        esac
        local med ratios
        med=$(printf '%s\n' "${values[@]}" | median)
        ratios=$(for i in "${!values[@]}"; do awk -v a="${values[$i]}" -v b="${nio[$i]}" 'BEGIN {printf "%.3f\n", a / b}'; done)
        printf '  %-42s %10.0f req/s   %sx NIO (%s-%s)   rounds: %s\n' "$label" "$med" \
            "$(median <<< "$ratios")" "$(sort -g <<< "$ratios" | head -1)" "$(sort -g <<< "$ratios" | tail -1)" "${values[*]}"
    done
    printf '  metrics on / off (--metrics vs warning, same rounds): %s\n' "$(ratio_summary lkm lk)"
    printf '  LoopKitHTTP / nginx (log at warning, same rounds): %s\n' "$(ratio_summary lk ngx)"
}

# upload_row NAME PORT PATH COMMAND...: 1 GiB of zeros streamed by curl (core 1) as a POST body; MB/s and the
# server's RSS growth (VmHWM after minus VmRSS before). /upload answers with the count and SHA-256; /echo
# streams the body back and curl's output is counted.
upload_row() {
    local name=$1 port=$2 path=$3; shift 3
    start "$port" "$@"
    local before; before=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    local t0 t1 out
    t0=$(date +%s.%N)
    if [ "$path" = /echo ]; then
        out=$(taskset -c "$CLIENT_CORE" sh -c "head -c 1073741824 /dev/zero | curl -s -X POST -T - http://127.0.0.1:$port/echo | wc -c")
    else
        out=$(taskset -c "$CLIENT_CORE" sh -c "head -c 1073741824 /dev/zero | curl -s -X POST -T - http://127.0.0.1:$port/upload")
    fi
    t1=$(date +%s.%N)
    local peak; peak=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
    cleanup
    local check=ok
    case $path in
        /echo) [ "$out" = 1073741824 ] || check="WRONG ($out bytes)" ;;
        /upload) [ "$out" = "received 1073741824 sha256 49bc20df15e412a64472421e13fe86ff1c5165e18b2afccf160d4dc19fe68a14" ] || check="WRONG ($out)" ;;
    esac
    awk -v name="$name" -v t0="$t0" -v t1="$t1" -v before="$before" -v peak="$peak" -v check="$check" 'BEGIN {
        printf "  %-42s %8.0f MB/s   server RSS growth %6.1f MiB   answer %s\n", name, 1073.741824 / (t1 - t0), (peak - before) / 1024, check }'
}

ROUNDS=${ROUNDS:-5}
echo "== HTTP: server pinned to core $SERVER_CORE, wrk -t1 -c64 on core $CLIENT_CORE (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
alternated "GET /hello, keep-alive"
alternated "GET /hello, Connection: close" -H "Connection: close"
echo "1 GiB streamed request bodies (curl on core $CLIENT_CORE)"
upload_row "LoopKitHTTP POST /upload (count + SHA-256)" $((PORT_BASE + 21)) /upload "$LOOPDEMO" serve --log-level warning
upload_row "NIOHTTP1 POST /upload (count + SHA-256)" $((PORT_BASE + 22)) /upload "$NIO_PEER"
upload_row "LoopKitHTTP POST /echo (client reads along)" $((PORT_BASE + 23)) /echo "$LOOPDEMO" serve --log-level warning
upload_row "NIOHTTP1 POST /echo (client reads along)" $((PORT_BASE + 24)) /echo "$NIO_PEER"
echo "GET /hello while 4 clients loop on /work?items=1000000 (~1 s of work each)"
start $((PORT_BASE + 7)) "$LOOPDEMO" serve --log-level warning; responsiveness_row "LoopKitHTTP, loop.process 1 ms/job" $((PORT_BASE + 7)); cleanup
start $((PORT_BASE + 8)) "$NIO_PEER" --work inline; responsiveness_row "NIOHTTP1, work inline" $((PORT_BASE + 8)); cleanup
start $((PORT_BASE + 9)) "$NIO_PEER" --work pool; responsiveness_row "NIOHTTP1, work on NIOThreadPool" $((PORT_BASE + 9)); cleanup
