#!/usr/bin/env bash
# make bench-h2: h2c keep-alive GET /hello with h2load (nghttp2-client, one thread) on CLIENT_CORE against
# LoopKitHTTP (LoopDemo serve) and nginx (one worker, `http2`) pinned to SERVER_CORE, alternated ROUNDS times;
# the median of the per-round ratios with their spread. h2load is single-threaded: its CPU share is printed
# beside each row (a client at ~100 % is the limit, not the server).
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/bench-lib.sh
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-200000}
PORT_BASE=${PORT_BASE:-18300}

# h2load_rps PORT: requests per second of one h2load run (-c 64 -m 100), and h2load's own CPU %.
h2load_rps() {
    local out
    out=$(/usr/bin/time -f "cpu=%P" taskset -c "$CLIENT_CORE" h2load -n "$REQUESTS" -c 64 -m 100 "http://127.0.0.1:$1/hello" 2>&1)
    local rps; rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<< "$out")
    local ok; ok=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' <<< "$out")
    local cpu; cpu=$(sed -n 's/^cpu=\([0-9]*\)%/\1/p' <<< "$out")
    [ "$ok" = "$REQUESTS" ] || { echo "h2load: $ok of $REQUESTS succeeded" >&2; echo "$out" >&2; exit 1; }
    echo "$rps $cpu"
}

echo "h2c, h2load -n $REQUESTS -c 64 -m 100 GET /hello; server on core $SERVER_CORE, h2load on core $CLIENT_CORE; $ROUNDS rounds"
lk=(); ng=(); lk_cpu=(); ng_cpu=()
for round in $(seq 1 "$ROUNDS"); do
    start $((PORT_BASE + 1)) "$LOOPDEMO" serve --log-level warning
    read -r rps cpu < <(h2load_rps $((PORT_BASE + 1))); lk+=("$rps"); lk_cpu+=("$cpu"); cleanup
    start $((PORT_BASE + 2)) sh Benchmarks/nginx-h2-peer.sh
    read -r rps cpu < <(h2load_rps $((PORT_BASE + 2))); ng+=("$rps"); ng_cpu+=("$cpu"); cleanup
    echo "  round $round: LoopKitHTTP ${lk[-1]} req/s (h2load ${lk_cpu[-1]} %), nginx ${ng[-1]} req/s (h2load ${ng_cpu[-1]} %)"
done
printf '  %-28s %10.0f req/s median\n' "LoopKitHTTP (h2c)" "$(printf '%s\n' "${lk[@]}" | median)"
printf '  %-28s %10.0f req/s median\n' "nginx 1.22 (h2c)" "$(printf '%s\n' "${ng[@]}" | median)"
echo "  LoopKitHTTP / nginx: $(ratio_summary lk ng)"
