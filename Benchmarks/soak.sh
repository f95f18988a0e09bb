#!/usr/bin/env bash
# The soak (issue 33, `make soak`): `LoopDemo serve` under a long, paced, mixed load from this machine, all to
# 127.0.0.1. Two servers, both pinned to core 0 (SERVER_CORE): one HTTPS with metrics on (the main one; a
# throwaway ECDSA P-256 certificate made here with openssl), one plain HTTP. The load generator
# (Benchmarks/soak.py: Python's stdlib and `websockets`) is pinned to core 1 (CLIENT_CORE) and drives a bounded
# mix: keep-alive and `Connection: close` requests, streamed uploads, WebSocket echo with permessage-deflate,
# server-sent event subscribers that come and go, clients that never read, clients that stall mid-request, and
# garbage. It samples each server's RSS, open descriptors and the `/hello` p99 every SAMPLE seconds and fails on
# RSS growth after warm-up (end more than 5 % over post-warm-up), descriptors not back to base once the clients
# have left, or any 5xx not asked for.
#   SOAK_MINUTES: the load's length (default 10). WARMUP: seconds (default 20 % of it, 60-300).
#   LOOPDEMO: the release binary. SOAK_OUT: the folder for soak.csv, soak.svg, soak-summary.json
#   (default Benchmarks/). NICE: the niceness of servers and load (default 0).
# It is not part of `make test`: a soak takes minutes.
set -euo pipefail
SOAK_MINUTES=${SOAK_MINUTES:-10}
SAMPLE=${SAMPLE:-10}
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
NICE=${NICE:-0}
here=$(cd "$(dirname "$0")" && pwd)
out=${SOAK_OUT:-$here}

python3 -c "import websockets" 2>/dev/null || python3 -m pip install --quiet websockets

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# serve NAME ARGS...: starts LoopDemo serve pinned to SERVER_CORE; waits for its "listening on" line.
serve() {
    local name=$1; shift
    nice -n "$NICE" taskset -c "$SERVER_CORE" "$LOOPDEMO" serve --port 0 --log-level warning "$@" \
        > "$work/$name.out" 2> "$work/$name.err" &
    pids+=($!)
    eval "${name}_pid=$!"
    for _ in $(seq 1 200); do grep -q "^listening on" "$work/$name.out" && return 0; sleep 0.05; done
    echo "LoopDemo serve ($name) did not start:" >&2; cat "$work/$name.err" >&2; exit 1
}
serve https --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --metrics 0
sleep 0.3  # the metrics line follows the listening line
serve http
https_port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/https.out")
metrics_port=$(sed -n 's/^metrics on .*:\([0-9]*\)$/\1/p' "$work/https.out")
http_port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/http.out")
echo "==> soak: $SOAK_MINUTES min; https :$https_port (pid $https_pid, metrics :$metrics_port), http :$http_port (pid $http_pid), core $SERVER_CORE; load on core $CLIENT_CORE; load average $(cut -d' ' -f1-3 /proc/loadavg)"

status=0
nice -n "$NICE" taskset -c "$CLIENT_CORE" python3 "$here/soak.py" --https-port "$https_port" --https-pid "$https_pid" \
    --http-port "$http_port" --http-pid "$http_pid" --metrics-port "$metrics_port" --ca "$work/cert.pem" \
    --minutes "$SOAK_MINUTES" --sample "$SAMPLE" ${WARMUP:+--warmup "$WARMUP"} \
    --csv "$out/soak.csv" --svg "$out/soak.svg" --summary "$out/soak-summary.json" || status=$?

for name in https http; do
    pid_var=${name}_pid
    kill -0 "${!pid_var}" 2>/dev/null || { echo "==> the $name server died during the soak:"; tail -20 "$work/$name.err"; status=1; }
    # The WebSocket clients that drop without a close frame make the echo handler fail, as they should.
    dropped=$(grep -c "ended without a close handshake" "$work/$name.err" || true)
    echo "==> the $name server: $dropped WebSocket handlers ended by a client gone without a close frame (as asked)"
    if grep -v "ended without a close handshake" "$work/$name.err" | grep -qiE "error|fatal|crash"; then
        echo "==> the $name server logged errors:"
        grep -v "ended without a close handshake" "$work/$name.err" | grep -iE "error|fatal|crash" | cut -c22- | sort | uniq -c | sort -rn | head -20
    fi
done
echo "==> load average after: $(cut -d' ' -f1-3 /proc/loadavg); CSV $out/soak.csv, plot $out/soak.svg"
exit $status
