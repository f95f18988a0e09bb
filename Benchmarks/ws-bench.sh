#!/usr/bin/env bash
# Live servers (issue 20) in one run (`make bench-ws`): LoopKitHTTP's WebSocket echo (`LoopDemo serve`'s
# /ws/echo) against a minimal NIOWebSocket server and hummingbird-websocket 2; memory per idle WebSocket;
# server-sent events fan-out of one job's progress on one loop.
# Each server is pinned to core 0 (SERVER_CORE), the load (WebSocketLoad, the subscribers) to core 1
# (CLIENT_CORE); one server at a time, servers alternated round by round (ROUNDS, default 5).
#   LOOPDEMO, NIO_WS_PEER, HB_WS_PEER, WS_LOAD, SSE_FANOUT: the release binaries.
#   SECONDS_PER_RUN: the counted seconds of each echo run (default 5, after 1 s of warm-up).
#   CONNECTIONS (64), SIZE (1024 bytes), IDLE (10000 idle connections), SUBSCRIBERS (1000).
set -euo pipefail
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
CONNECTIONS=${CONNECTIONS:-64}
SIZE=${SIZE:-1024}
IDLE=${IDLE:-10000}
SUBSCRIBERS=${SUBSCRIBERS:-1000}
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
NIO_WS_PEER=${NIO_WS_PEER:-Benchmarks/.build/release/NIOWebSocketPeer}
HB_WS_PEER=${HB_WS_PEER:-Benchmarks/.build/release/HummingbirdWebSocketPeer}
WS_LOAD=${WS_LOAD:-Benchmarks/.build/release/WebSocketLoad}
SSE_FANOUT=${SSE_FANOUT:-Benchmarks/.build/release/SSEFanout}
PORT_BASE=${PORT_BASE:-18700}
here=$(dirname "$0")
# shellcheck source=bench-lib.sh
source "$here/bench-lib.sh"

ulimit -n "$(ulimit -Hn)"

# launch WHO PORT: starts LoopKitHTTP (lk), NIOWebSocket (nio) or hummingbird-websocket (hb), pinned.
launch() {
    case $1 in
        lk) start "$2" "$LOOPDEMO" serve --log-level warning ;;
        nio) start "$2" "$NIO_WS_PEER" ;;
        hb) start "$2" "$HB_WS_PEER" ;;
    esac
}

label() {
    case $1 in
        lk) echo "LoopKitHTTP WebSocket (1 loop)" ;;
        nio) echo "NIOWebSocket (1 event loop)" ;;
        hb) echo "hummingbird-websocket 2 (1 event loop)" ;;
    esac
}

# echo_run PORT: one WebSocketLoad run against the running server; prints
# "messages/s p99-µs server-CPU-µs-per-message server-core-busy-% client-core-busy-% errors".
echo_run() {
    local port=$1 before after t0 t1 out
    before=$(cpu_ticks)
    t0=$(date +%s.%N)
    out=$(taskset -c "$CLIENT_CORE" "$WS_LOAD" --port "$port" --connections "$CONNECTIONS" --size "$SIZE" \
        --seconds "$SECONDS_PER_RUN" --warmup 1)
    t1=$(date +%s.%N)
    after=$(cpu_ticks)
    case $out in messages*) ;; *) echo "WebSocketLoad: $out" >&2; exit 1 ;; esac
    # The server's CPU over the whole run (handshakes and warm-up included) per message at the counted rate.
    awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" -v t0="$t0" -v t1="$t1" '{
        for (i = 1; i < NF; i += 2) v[$i] = $(i + 1)
        cpu = ticks / hz; wall = t1 - t0
        printf "%s %s %.1f %.0f %s %s\n", v["rate"], v["p99_us"], (v["rate"] > 0 ? cpu / (v["rate"] * wall) * 1e6 : 0),
            cpu / wall * 100, v["client_cpu_pct"], v["errors"] }' <<< "$out"
}

# echo_rows: ROUNDS rounds of lk, nio, hb, one after another in each round.
echo_rows() {
    local lk=() nio=() hb=() lkp99=() niop99=() hbp99=() lkcpu=() niocpu=() hbcpu=() lkbusy=() niobusy=() hbbusy=()
    local lkclient=() nioclient=() hbclient=() errors=0
    local port=$((PORT_BASE + 1))
    for _ in $(seq 1 "$ROUNDS"); do
        for who in lk nio hb; do
            launch "$who" "$port"
            local line; line=$(echo_run "$port")
            cleanup
            local fields; read -ra fields <<< "$line"
            local -n rate=$who p99=${who}p99 cpu=${who}cpu busy=${who}busy client=${who}client
            rate+=("${fields[0]}"); p99+=("${fields[1]}"); cpu+=("${fields[2]}"); busy+=("${fields[3]}")
            client+=("${fields[4]}")
            if [ "${fields[5]}" != 0 ]; then echo "  warning: $(label "$who"): ${fields[5]} wrong echoes"; errors=1; fi
        done
    done
    echo "WebSocket echo, $CONNECTIONS connections, $SIZE-byte text messages, one in flight per connection"
    echo "  ($ROUNDS alternated rounds of ${SECONDS_PER_RUN}s after 1 s warm-up; WebSocketLoad: masked frames, every echo's"
    echo "  header, length and bytes checked; median messages/s, p99 round trip; ratio = median of per-round ratios"
    echo "  to NIOWebSocket, min-max; CPU from /proc/PID/stat, core busy = CPU time / wall time)"
    for who in lk nio hb; do
        local -n rate=$who p99=${who}p99 cpu=${who}cpu busy=${who}busy client=${who}client
        printf '  %-38s %7.0f msg/s   %sx NIO   p99 %5s us   server %4s us/msg, core %3s%%   load core %3s%%   rounds: %s\n' \
            "$(label "$who")" "$(printf '%s\n' "${rate[@]}" | median)" "$(ratio_summary "$who" nio)" \
            "$(printf '%s\n' "${p99[@]}" | median)" "$(printf '%s\n' "${cpu[@]}" | median)" \
            "$(printf '%s\n' "${busy[@]}" | median)" "$(printf '%s\n' "${client[@]}" | median)" "${rate[*]}"
    done
    [ "$errors" = 0 ] && echo "  every echo checked: 0 wrong"
}

# idle_row WHO: the server's RSS growth per idle WebSocket with IDLE open, each upgraded and answered one
# SIZE-byte echo (WebSocketLoad --idle on CLIENT_CORE).
idle_row() {
    local who=$1 port=$((PORT_BASE + 10))
    launch "$who" "$port"
    idle_rss_row "$(label "$who")" "$IDLE" "$WS_LOAD" --port "$port" --idle "$IDLE" --size "$SIZE"
}

# sse_rows: SSEFanout on SERVER_CORE (its subscriber thread pins itself to CLIENT_CORE).
sse_rows() {
    local out
    out=$(taskset -c "$SERVER_CORE" "$SSE_FANOUT" --subscribers "$SUBSCRIBERS")
    case $out in *failed*) echo "  SSEFanout: $out"; return ;; esac
    awk '{ for (i = 2; i < NF; i += 2) v[$1, $i] = $(i + 1) }
        END {
            printf "  job alone (before)         %8s ms, %5s iterations, longest iteration %6s ms (p99 %s, median %s)\n",
                v["alone-before", "job_ms"], v["alone-before", "iterations"], v["alone-before", "longest_iteration_ms"],
                v["alone-before", "p99_iteration_ms"], v["alone-before", "median_iteration_ms"]
            printf "  job with %5s subscribers %8s ms, %5s iterations, longest iteration %6s ms (p99 %s, median %s), the answering iterations apart\n",
                v["fanout-deliveries", "subscribers"], v["fanout", "job_ms"], v["fanout", "iterations"],
                v["fanout", "longest_iteration_ms"], v["fanout", "p99_iteration_ms"], v["fanout", "median_iteration_ms"]
            printf "  the iterations answering the %s requests at once (response heads, then the streams starting): %s ms\n",
                v["fanout-deliveries", "subscribers"], v["fanout", "answering_iterations_ms"]
            printf "  job alone (after)          %8s ms, %5s iterations, longest iteration %6s ms (p99 %s, median %s)\n",
                v["alone-after", "job_ms"], v["alone-after", "iterations"], v["alone-after", "longest_iteration_ms"],
                v["alone-after", "p99_iteration_ms"], v["alone-after", "median_iteration_ms"]
            printf "  deliveries: %s in all; per subscriber %s-%s (median %s); %s job states seen, each delivered to a median of %s subscribers (max %s); %s per loop iteration on average\n",
                v["fanout-deliveries", "deliveries"], v["fanout-deliveries", "per_subscriber_min"],
                v["fanout-deliveries", "per_subscriber_max"], v["fanout-deliveries", "per_subscriber_median"],
                v["fanout-deliveries", "states"], v["fanout-deliveries", "per_state_median"],
                v["fanout-deliveries", "per_state_max"], v["fanout-deliveries", "per_iteration_mean"]
            printf "  job: %s items of ~1 us each, 1 ms budget per iteration (loop.process)\n", v["work", "items"]
        }' <<< "$out"
}

echo "== Live servers: server pinned to core $SERVER_CORE, load on core $CLIENT_CORE (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
echo_rows
echo "Memory per idle WebSocket ($IDLE open, each upgraded and answered one $SIZE-byte echo; server RSS growth / $IDLE)"
for who in lk nio hb; do idle_row "$who"; done
echo "Server-sent events fan-out: one job's progress (.progressEvents(job.progress)) to $SUBSCRIBERS subscribers on one loop"
echo "  (SSEFanout: HTTPServer on LoopGroup(threads: 1) on core $SERVER_CORE, subscribers on core $CLIENT_CORE; iterations timed by a"
echo "  self-re-enqueuing probe; a job state = one \"completed\" count)"
sse_rows
echo "(load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
