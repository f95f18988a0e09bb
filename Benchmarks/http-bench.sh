#!/usr/bin/env bash
# LoopKitHTTP against a minimal NIOHTTP1 server and Hummingbird 2, in one run (`make bench-http`).
# Each server is started on its own port, pinned to core 0 (taskset -c 0); wrk runs pinned to core 1
# with the same settings; one server at a time. Rows: requests/s and p99 from wrk's --latency output.
#   LOOPDEMO, NIO_PEER, HB_PEER: the three release binaries.  DURATION: wrk's -d (default 10s).
set -euo pipefail
DURATION=${DURATION:-10s}
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
NIO_PEER=${NIO_PEER:-Benchmarks/.build/release/NIOHTTPPeer}
HB_PEER=${HB_PEER:-Benchmarks/.build/release/HummingbirdPeer}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
PORT_BASE=${PORT_BASE:-18400}
pid=""
cleanup() {
    if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    pid=""
}
trap cleanup EXIT

# start PORT COMMAND...: starts a pinned server and waits for its "listening on" line.
start() {
    local port=$1; shift
    local log; log=$(mktemp)
    taskset -c "$SERVER_CORE" "$@" --port "$port" > "$log" 2>/dev/null &
    pid=$!
    for _ in $(seq 1 200); do grep -q "^listening on" "$log" && { rm -f "$log"; return 0; }; sleep 0.05; done
    echo "server did not start: $*" >&2; exit 1
}

# cpu_ticks: the server's user + system CPU time so far, in clock ticks (/proc/PID/stat fields 14 and 15).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

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

echo "== HTTP: server pinned to core $SERVER_CORE, wrk -t1 -c64 -d$DURATION on core $CLIENT_CORE (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "GET /hello, keep-alive"
start $((PORT_BASE + 1)) "$LOOPDEMO" serve --log-level warning; wrk_row "LoopKitHTTP (1 loop)" "http://127.0.0.1:$((PORT_BASE + 1))/hello"; cleanup
start $((PORT_BASE + 11)) "$LOOPDEMO" serve --engine net --log-level warning; wrk_row "LoopKitHTTP on LoopKitNet (1 loop)" "http://127.0.0.1:$((PORT_BASE + 11))/hello"; cleanup
start $((PORT_BASE + 2)) "$NIO_PEER"; wrk_row "NIOHTTP1 (1 event loop)" "http://127.0.0.1:$((PORT_BASE + 2))/hello"; cleanup
start $((PORT_BASE + 3)) "$HB_PEER"; wrk_row "Hummingbird 2 (1 event loop)" "http://127.0.0.1:$((PORT_BASE + 3))/hello"; cleanup
echo "GET /hello, Connection: close"
start $((PORT_BASE + 4)) "$LOOPDEMO" serve --log-level warning; wrk_row "LoopKitHTTP (1 loop)" "http://127.0.0.1:$((PORT_BASE + 4))/hello" -H "Connection: close"; cleanup
start $((PORT_BASE + 14)) "$LOOPDEMO" serve --engine net --log-level warning; wrk_row "LoopKitHTTP on LoopKitNet (1 loop)" "http://127.0.0.1:$((PORT_BASE + 14))/hello" -H "Connection: close"; cleanup
start $((PORT_BASE + 5)) "$NIO_PEER"; wrk_row "NIOHTTP1 (1 event loop)" "http://127.0.0.1:$((PORT_BASE + 5))/hello" -H "Connection: close"; cleanup
start $((PORT_BASE + 6)) "$HB_PEER"; wrk_row "Hummingbird 2 (1 event loop)" "http://127.0.0.1:$((PORT_BASE + 6))/hello" -H "Connection: close"; cleanup
echo "GET /hello while 4 clients loop on /work?items=1000000 (~1 s of work each)"
start $((PORT_BASE + 7)) "$LOOPDEMO" serve --log-level warning; responsiveness_row "LoopKitHTTP, loop.process 1 ms/job" $((PORT_BASE + 7)); cleanup
start $((PORT_BASE + 8)) "$NIO_PEER" --work inline; responsiveness_row "NIOHTTP1, work inline" $((PORT_BASE + 8)); cleanup
start $((PORT_BASE + 9)) "$NIO_PEER" --work pool; responsiveness_row "NIOHTTP1, work on NIOThreadPool" $((PORT_BASE + 9)); cleanup
