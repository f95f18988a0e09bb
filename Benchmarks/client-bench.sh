#!/usr/bin/env bash
# make bench-client: LoopKitHTTPClient against AsyncHTTPClient (Benchmarks/Sources/ClientBench), each on one event
# loop, the client process pinned to CLIENT_CORE, `LoopDemo serve` (release) pinned to SERVER_CORE; the two clients
# alternated ROUNDS times (the first of each round swaps), the median of the per-round ratios with their spread.
#   1. 64 concurrent keep-alive GET /hello, REQUESTS each run: requests/s, p50 and p99 latency, the client's CPU time
#      a request, and the server's CPU share (near 100 %: the server is the limit, not the client).
#   2. One GET of a 1 GiB file (random bytes, made in /tmp, deleted at the end) served by `serve --root`: MB/s, the
#      client's CPU time for it and its RSS growth (VmHWM after the download less VmRSS before it).
#   3. HTTP/2, 100 concurrent streams on one connection, beside HTTP/1.1 with 100 connections: LoopKit over h2c
#      (prior knowledge) when the system's libcurl can reuse such a connection; both clients over TLS (ALPN h2;
#      AsyncHTTPClient has no h2c), one certificate made here.
#   LOOPDEMO, CLIENT: the release binaries.  ROUNDS (5), REQUESTS (200000), H2_REQUESTS (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/bench-lib.sh
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
CLIENT=${CLIENT:-Benchmarks/.build/release/ClientBench}
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-200000}
H2_REQUESTS=${H2_REQUESTS:-100000}
PORT_BASE=${PORT_BASE:-18700}
ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d /tmp/loopkit-client-bench.XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT

# run_client PORT ARGS...: one ClientBench run pinned to CLIENT_CORE against the server `pid` listening on PORT;
# prints its output line and the server's CPU % over the run.
run_client() {
    local port=$1; shift
    local ticks0 t0 out ticks1 t1
    ticks0=$(cpu_ticks); t0=$(date +%s%N)
    out=$(taskset -c "$CLIENT_CORE" "$CLIENT" --port "$port" "$@")
    ticks1=$(cpu_ticks); t1=$(date +%s%N)
    case $out in failed*) echo "ClientBench $*: $out" >&2; exit 1 ;; esac
    local hz; hz=$(getconf CLK_TCK)
    echo "$out server_cpu $(awk -v d=$((ticks1 - ticks0)) -v ns=$((t1 - t0)) -v hz="$hz" 'BEGIN {printf "%.0f", 100 * d / hz / (ns / 1e9)}')"
}
# field NAME LINE: the value after NAME in a `key value ...` line.
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}' <<< "$2"; }
# summary LABEL ARRAY UNIT: "LABEL  median UNIT (min-max)".
summary() {
    local -n values=$2
    printf '  %-44s %10s %s (%s-%s)\n' "$1" "$(printf '%s\n' "${values[@]}" | median)" "$3" \
        "$(printf '%s\n' "${values[@]}" | sort -g | head -1)" "$(printf '%s\n' "${values[@]}" | sort -g | tail -1)"
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine: other sessions' builds may run; alternation cancels drift)"

# 1. 64 concurrent GET /hello
echo "64 concurrent keep-alive GET /hello from one loop, $REQUESTS requests a run after a warm-up; LoopDemo serve on core $SERVER_CORE, the client on core $CLIENT_CORE; $ROUNDS rounds"
port=$((PORT_BASE + 1))
start "$port" "$LOOPDEMO" serve --log-level warning
lk_rps=(); lk_p50=(); lk_p99=(); lk_cpu=(); ahc_rps=(); ahc_p50=(); ahc_p99=(); ahc_cpu=()
for round in $(seq 1 "$ROUNDS"); do
    order="loopkit ahc"; [ $((round % 2)) -eq 0 ] && order="ahc loopkit"
    line=""
    for who in $order; do
        out=$(run_client "$port" --client "$who" --mode hello --count "$REQUESTS" --concurrency 64)
        if [ "$who" = loopkit ]; then
            lk_rps+=("$(field rps "$out")"); lk_p50+=("$(field p50_us "$out")"); lk_p99+=("$(field p99_us "$out")"); lk_cpu+=("$(field cpu_us "$out")")
        else
            ahc_rps+=("$(field rps "$out")"); ahc_p50+=("$(field p50_us "$out")"); ahc_p99+=("$(field p99_us "$out")"); ahc_cpu+=("$(field cpu_us "$out")")
        fi
        line+="  $who $(field rps "$out") req/s p50 $(field p50_us "$out") us p99 $(field p99_us "$out") us, client $(field cpu_us "$out") us CPU a request (server $(field server_cpu "$out") %);"
    done
    echo "  round $round:$line"
done
cleanup
summary "LoopKitHTTPClient req/s" lk_rps "req/s"
summary "AsyncHTTPClient req/s" ahc_rps "req/s"
summary "LoopKitHTTPClient p50" lk_p50 "us"
summary "AsyncHTTPClient p50" ahc_p50 "us"
summary "LoopKitHTTPClient p99" lk_p99 "us"
summary "AsyncHTTPClient p99" ahc_p99 "us"
summary "LoopKitHTTPClient client CPU a request" lk_cpu "us"
summary "AsyncHTTPClient client CPU a request" ahc_cpu "us"
echo "  LoopKitHTTPClient / AsyncHTTPClient req/s: $(ratio_summary lk_rps ahc_rps)   (goal >= 2)"
echo "  AsyncHTTPClient / LoopKitHTTPClient client CPU a request: $(ratio_summary ahc_cpu lk_cpu)"

# 2. A 1 GiB download
mkdir -p "$work/root"
head -c $((1 << 30)) /dev/urandom > "$work/root/big.bin"
echo "GET /files/big.bin, 1 GiB of random bytes (page cache warm), streamed and counted; $ROUNDS rounds"
port=$((PORT_BASE + 2))
start "$port" "$LOOPDEMO" serve --log-level warning --root "$work/root"
curl -s -o /dev/null "http://127.0.0.1:$port/files/big.bin"
lk_mbps=(); lk_rss=(); lk_dcpu=(); ahc_mbps=(); ahc_rss=(); ahc_dcpu=()
for round in $(seq 1 "$ROUNDS"); do
    order="loopkit ahc"; [ $((round % 2)) -eq 0 ] && order="ahc loopkit"
    line=""
    for who in $order; do
        out=$(run_client "$port" --client "$who" --mode download --path /files/big.bin)
        [ "$(field bytes "$out")" = $((1 << 30)) ] || { echo "$who: $out" >&2; exit 1; }
        growth=$(( ($(field hwm_after_kib "$out") - $(field rss_before_kib "$out")) / 1024 ))
        if [ "$who" = loopkit ]; then lk_mbps+=("$(field mbps "$out")"); lk_rss+=("$growth"); lk_dcpu+=("$(field cpu_ms_per_gib "$out")")
        else ahc_mbps+=("$(field mbps "$out")"); ahc_rss+=("$growth"); ahc_dcpu+=("$(field cpu_ms_per_gib "$out")"); fi
        line+="  $who $(field mbps "$out") MB/s, client $(field cpu_ms_per_gib "$out") ms CPU, RSS +$growth MiB (server $(field server_cpu "$out") %);"
    done
    echo "  round $round:$line"
done
cleanup
rm -f "$work/root/big.bin"
summary "LoopKitHTTPClient" lk_mbps "MB/s"
summary "AsyncHTTPClient" ahc_mbps "MB/s"
summary "LoopKitHTTPClient RSS growth" lk_rss "MiB"
summary "AsyncHTTPClient RSS growth" ahc_rss "MiB"
summary "LoopKitHTTPClient client CPU for the GiB" lk_dcpu "ms"
summary "AsyncHTTPClient client CPU for the GiB" ahc_dcpu "ms"
echo "  LoopKitHTTPClient / AsyncHTTPClient MB/s: $(ratio_summary lk_mbps ahc_mbps)   (goals: >= 1, RSS growth < 32 MiB)"
echo "  AsyncHTTPClient / LoopKitHTTPClient client CPU for the GiB: $(ratio_summary ahc_dcpu lk_dcpu)"

# 3. HTTP/2: 100 streams on one connection beside HTTP/1.1 with 100 connections
echo "100 concurrent GET /hello, $H2_REQUESTS requests a run: HTTP/2 streams on one connection and HTTP/1.1 on 100 connections; $ROUNDS rounds"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
plain=$((PORT_BASE + 3)); tls=$((PORT_BASE + 4))
declare -A rows=()
names=("LoopKit h2c, 1 connection" "LoopKit HTTP/1.1, 100 connections" "LoopKit h2 (TLS), 1 connection"
       "AHC h2 (TLS), 1 connection" "LoopKit HTTP/1.1 (TLS), 100 connections" "AHC HTTP/1.1 (TLS), 100 connections")
# h2c by prior knowledge needs a libcurl that reuses such a connection: Debian 12's 7.88.1 fails the second request
# on it with CURLE_HTTP2 (16), against nginx as well. Checked here with the curl tool on the same libcurl.
start "$plain" "$LOOPDEMO" serve --log-level warning
plain_pair=loopkit-h1
if curl -sf --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$plain/hello" -o /dev/null "http://127.0.0.1:$plain/hello"; then
    plain_pair="loopkit-h2 loopkit-h1"
else
    echo "  LoopKit h2c: not measured: $(curl --version | head -1 | cut -d' ' -f1-3) fails the second request on a reused h2c (prior knowledge) connection (CURLE_HTTP2), against nginx too; h2 over TLS below"
    names=("${names[@]:1}")
fi
cleanup
for round in $(seq 1 "$ROUNDS"); do
    line=""
    start "$plain" "$LOOPDEMO" serve --log-level warning
    for who in $plain_pair; do
        case $who in
            loopkit-h2) name="LoopKit h2c, 1 connection"; out=$(run_client "$plain" --client loopkit --mode hello --http2 --count "$H2_REQUESTS" --concurrency 100) ;;
            loopkit-h1) name="LoopKit HTTP/1.1, 100 connections"; out=$(run_client "$plain" --client loopkit --mode hello --count "$H2_REQUESTS" --concurrency 100) ;;
        esac
        rows[$name]+="$(field rps "$out") "; line+="  $who $(field rps "$out") (server $(field server_cpu "$out") %);"
    done
    cleanup
    start "$tls" "$LOOPDEMO" serve --log-level warning --tls-cert "$work/cert.pem" --tls-key "$work/key.pem"
    order="loopkit ahc"; [ $((round % 2)) -eq 0 ] && order="ahc loopkit"
    for who in $order; do
        if [ "$who" = loopkit ]; then n2="LoopKit h2 (TLS), 1 connection"; n1="LoopKit HTTP/1.1 (TLS), 100 connections"
        else n2="AHC h2 (TLS), 1 connection"; n1="AHC HTTP/1.1 (TLS), 100 connections"; fi
        out=$(run_client "$tls" --client "$who" --mode hello --http2 --tls-ca "$work/cert.pem" --count "$H2_REQUESTS" --concurrency 100)
        rows[$n2]+="$(field rps "$out") "; line+="  $who-h2-tls $(field rps "$out") (server $(field server_cpu "$out") %);"
        out=$(run_client "$tls" --client "$who" --mode hello --tls-ca "$work/cert.pem" --count "$H2_REQUESTS" --concurrency 100)
        rows[$n1]+="$(field rps "$out") "; line+="  $who-h1-tls $(field rps "$out") (server $(field server_cpu "$out") %);"
    done
    cleanup
    echo "  round $round:$line"
done
for name in "${names[@]}"; do
    read -r -a row_values <<< "${rows[$name]}"
    summary "$name" row_values "req/s"
done
read -r -a a <<< "${rows["LoopKit h2 (TLS), 1 connection"]}"; read -r -a b <<< "${rows["AHC h2 (TLS), 1 connection"]}"
echo "  LoopKit / AHC, h2 over TLS: $(ratio_summary a b)"
read -r -a b <<< "${rows["LoopKit HTTP/1.1 (TLS), 100 connections"]}"
echo "  LoopKit h2 (TLS, 1 connection) / LoopKit HTTP/1.1 (TLS, 100 connections): $(ratio_summary a b)"
if [ -n "${rows["LoopKit h2c, 1 connection"]:-}" ]; then
    read -r -a a <<< "${rows["LoopKit h2c, 1 connection"]}"; read -r -a b <<< "${rows["LoopKit HTTP/1.1, 100 connections"]}"
    echo "  LoopKit h2c / LoopKit HTTP/1.1: $(ratio_summary a b)"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) at the end"
