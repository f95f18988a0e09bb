#!/usr/bin/env bash
# UDP echo, 64-byte datagrams, one loop (`make bench-udp`): `LoopDemo udp-echo` (recvmmsg batches, one sendmmsg
# per batch) against NIO's DatagramBootstrap (recvmmsg reads of the same batch, one flush per read batch) and
# libuv 1.44 from Debian's libuv1-dev (UV_UDP_RECVMMSG reads, uv_udp_try_send per datagram).
# Each server pinned to core 0 (SERVER_CORE), the load (UDPLoad: WINDOW datagrams in flight over one connected
# socket, sendmmsg/recvmmsg) to core 1 (CLIENT_CORE); one server at a time, alternated round by round.
#   ROUNDS (5), SECONDS_PER_RUN (5, after 1 s of warm-up), WINDOW (64), SIZE (64), HOST (127.0.0.1).
#   LOOPDEMO, NIO_UDP_PEER, UV_UDP_PEER, UDP_LOAD: the release binaries.
set -euo pipefail
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
WINDOW=${WINDOW:-64}
SIZE=${SIZE:-64}
HOST=${HOST:-127.0.0.1}
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
NIO_UDP_PEER=${NIO_UDP_PEER:-Benchmarks/.build/release/NIOUDPEchoPeer}
UV_UDP_PEER=${UV_UDP_PEER:-Benchmarks/.build/release/UVUDPEchoPeer}
UDP_LOAD=${UDP_LOAD:-Benchmarks/.build/release/UDPLoad}
PORT_BASE=${PORT_BASE:-18900}
here=$(dirname "$0")
# shellcheck source=bench-lib.sh
source "$here/bench-lib.sh"

# run_one WHO PORT: starts the server pinned, runs the load pinned, prints datagrams/s.
run_one() {
    local who=$1 port=$2
    case $who in
        lk) start "$port" "$LOOPDEMO" udp-echo --host "$HOST" --batch 64 ;;
        nio) start "$port" "$NIO_UDP_PEER" --host "$HOST" --batch 64 ;;
        uv) start "$port" "$UV_UDP_PEER" --host "$HOST" ;;
    esac
    local out
    out=$(taskset -c "$CLIENT_CORE" "$UDP_LOAD" --host "$HOST" --port "$port" --seconds "$SECONDS_PER_RUN" --window "$WINDOW" --size "$SIZE")
    cleanup
    awk '{print $2}' <<< "$out"
}

echo "UDP echo, $SIZE-byte datagrams, one loop, $WINDOW in flight, $ROUNDS rounds of $SECONDS_PER_RUN s, server on core $SERVER_CORE, load on core $CLIENT_CORE"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
lk=(); nio=(); uv=()
port=$PORT_BASE
for round in $(seq 1 "$ROUNDS"); do
    order=(lk nio uv)
    (( round % 2 == 0 )) && order=(uv nio lk)
    for who in "${order[@]}"; do
        port=$((port + 1))
        value=$(run_one "$who" "$port")
        case $who in lk) lk+=("$value") ;; nio) nio+=("$value") ;; uv) uv+=("$value") ;; esac
    done
    echo "  round $round: LoopKit ${lk[-1]}, NIO ${nio[-1]}, libuv ${uv[-1]} datagrams/s"
done
printf 'LoopKit  median %s datagrams/s\n' "$(printf '%s\n' "${lk[@]}" | median)"
printf 'NIO      median %s datagrams/s\n' "$(printf '%s\n' "${nio[@]}" | median)"
printf 'libuv    median %s datagrams/s\n' "$(printf '%s\n' "${uv[@]}" | median)"
printf 'LoopKit / NIO   %s (median of per-round ratios, min-max)\n' "$(ratio_summary lk nio)"
printf 'LoopKit / libuv %s (median of per-round ratios, min-max)\n' "$(ratio_summary lk uv)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
