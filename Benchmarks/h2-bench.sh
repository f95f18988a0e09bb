#!/usr/bin/env bash
# make bench-h2: keep-alive GET /hello over HTTP/2 with h2load (nghttp2-client, one thread, -c 64 -m 100) on
# CLIENT_CORE against LoopKitHTTP (LoopDemo serve), a minimal swift-nio-http2 server (Benchmarks' NIOHTTP2Peer, one
# event loop), nginx (one worker, `http2`) and h2o (Debian's, one thread),
# each pinned to SERVER_CORE, alternated ROUNDS times (the order rotates each round); the median of the per-round
# ratios with their spread. First h2c (prior knowledge), then h2 over TLS (ALPN; one throwaway ECDSA P-256
# certificate made here, as https-bench.sh). h2load is single-threaded: its CPU share is printed beside each run
# (a client near 100 % is the limit, not the server).
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/bench-lib.sh
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
NIO_PEER=${NIO_PEER:-Benchmarks/.build/release/NIOHTTP2Peer}
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-200000}
PORT_BASE=${PORT_BASE:-18300}
work=$(mktemp -d /tmp/loopkit-h2-bench.XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# h2load_rps URL: requests per second of one h2load run (-c 64 -m 100), and h2load's own CPU %.
h2load_rps() {
    local out
    out=$(/usr/bin/time -f "cpu=%P" taskset -c "$CLIENT_CORE" h2load -n "$REQUESTS" -c 64 -m 100 "$1" 2>&1)
    local rps; rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<< "$out")
    local ok; ok=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' <<< "$out")
    local cpu; cpu=$(sed -n 's/^cpu=\([0-9]*\)%/\1/p' <<< "$out")
    [ "$ok" = "$REQUESTS" ] || { echo "h2load: $ok of $REQUESTS succeeded" >&2; echo "$out" >&2; exit 1; }
    grep -q "^status codes: $REQUESTS 2xx" <<< "$out" || { echo "h2load: not all 2xx" >&2; echo "$out" >&2; exit 1; }
    grep -q "^Application protocol: h2" <<< "$out" || { echo "h2load: not h2" >&2; echo "$out" >&2; exit 1; }
    echo "$rps $cpu"
}

# launch WHO PORT TRANSPORT: starts LoopKitHTTP (lk), swift-nio-http2 (nio), nginx or h2o on PORT, h2c (plain) or h2 over TLS (tls).
launch() {
    local who=$1 port=$2 transport=$3
    if [ "$transport" = tls ]; then export TLS_CERT=$work/cert.pem TLS_KEY=$work/key.pem; else unset TLS_CERT TLS_KEY; fi
    case $who in
        lk) if [ "$transport" = tls ]; then start "$port" "$LOOPDEMO" serve --log-level warning --tls-cert "$TLS_CERT" --tls-key "$TLS_KEY"
            else start "$port" "$LOOPDEMO" serve --log-level warning; fi ;;
        nio) if [ "$transport" = tls ]; then start "$port" "$NIO_PEER" --tls-cert "$TLS_CERT" --tls-key "$TLS_KEY"
             else start "$port" "$NIO_PEER"; fi ;;
        nginx) start "$port" sh Benchmarks/nginx-h2-peer.sh ;;
        h2o) start "$port" sh Benchmarks/h2o-h2-peer.sh ;;
    esac
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) at the start (a shared machine: other sessions' builds may run; rounds alternate the servers)"
declare -A label=([lk]="LoopKitHTTP" [nio]="swift-nio-http2" [nginx]="nginx 1.22" [h2o]="h2o 2.2.5")
declare -A offset=([lk]=1 [nio]=4 [nginx]=2 [h2o]=3)
for transport in plain tls; do
    if [ "$transport" = plain ]; then scheme=http; name=h2c; else scheme=https; name="h2 over TLS"; fi
    echo "$name, h2load -n $REQUESTS -c 64 -m 100 GET /hello; server on core $SERVER_CORE, h2load on core $CLIENT_CORE; $ROUNDS rounds"
    lk=(); nio=(); nginx=(); h2o=()
    for round in $(seq 1 "$ROUNDS"); do
        case $((round % 4)) in 1) order="lk nio nginx h2o" ;; 2) order="nio nginx h2o lk" ;; 3) order="nginx h2o lk nio" ;; 0) order="h2o lk nio nginx" ;; esac
        line=""
        for who in $order; do
            rps=""
            port=$((PORT_BASE + ${offset[$who]})); [ "$transport" = tls ] && port=$((port + 10))
            launch "$who" "$port" "$transport"
            read -r rps cpu < <(h2load_rps "$scheme://127.0.0.1:$port/hello") || true
            cleanup
            # h2load_rps runs in a process substitution: its exit does not end this script, an empty figure does.
            [ -n "${rps:-}" ] || { echo "no figure for ${label[$who]}" >&2; exit 1; }
            declare -n into=$who; into+=("$rps"); unset -n into
            line+="  ${label[$who]} $rps req/s (h2load $cpu %);"
        done
        echo "  round $round:$line"
    done
    for who in lk nio nginx h2o; do
        declare -n values=$who
        printf '  %-28s %10.0f req/s median\n' "${label[$who]} ($name)" "$(printf '%s\n' "${values[@]}" | median)"
        unset -n values
    done
    echo "  LoopKitHTTP / swift-nio-http2 ($name): $(ratio_summary lk nio)   (goal >= 2)"
    echo "  LoopKitHTTP / nginx ($name): $(ratio_summary lk nginx)   (goal >= 1)"
    echo "  LoopKitHTTP / h2o ($name): $(ratio_summary lk h2o)"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) at the end"
