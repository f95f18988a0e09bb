#!/usr/bin/env bash
# make bench-client: LoopKitHTTPClient on its two engines (libcurl's, `loopkit`, and its own HTTP/1.1 engine,
# `loopkit-own`) against AsyncHTTPClient (Benchmarks/Sources/ClientBench), each on one event loop, the client process
# pinned to CLIENT_CORE, `LoopDemo serve` (release) pinned to SERVER_CORE; the clients alternated ROUNDS times (the
# order rotated each round), the median of the per-round ratios with their spread.
#   1. 64 concurrent keep-alive GET /hello, REQUESTS each run: requests/s, p50 and p99 latency, the client's CPU time
#      a request, and the server's CPU share (near 100 %: the server is the limit, not the client).
#   2. One GET of a 1 GiB file (random bytes, made in /tmp, deleted at the end) served by `serve --root`: MB/s, the
#      client's CPU time for it and its RSS growth (VmHWM after the download less VmRSS before it).
#   3. HTTP/2, 100 concurrent streams on one connection, beside HTTP/1.1 with 100 connections (curl's engine and
#      the own one): LoopKit over h2c
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

# The three contestants of sections 1 and 2, in the order of round 1; each round rotates it by one.
CLIENTS=(loopkit loopkit-own ahc)
declare -A LABEL=([loopkit]="LoopKit curl engine" [loopkit-own]="LoopKit own engine" [ahc]="AsyncHTTPClient")
# order ROUND: the contestants of round ROUND, rotated.
order() { local r=$(( ($1 - 1) % ${#CLIENTS[@]} )); echo "${CLIENTS[@]:$r} ${CLIENTS[@]:0:$r}"; }

# 1. 64 concurrent GET /hello
echo "64 concurrent keep-alive GET /hello from one loop, $REQUESTS requests a run after a warm-up; LoopDemo serve on core $SERVER_CORE, the client on core $CLIENT_CORE; $ROUNDS rounds, the order rotated each round"
port=$((PORT_BASE + 1))
start "$port" "$LOOPDEMO" serve --log-level warning
declare -A rps=() p50=() p99=() cpu=()
for round in $(seq 1 "$ROUNDS"); do
    line=""
    for who in $(order "$round"); do
        out=$(run_client "$port" --client "$who" --mode hello --count "$REQUESTS" --concurrency 64)
        rps[$who]+="$(field rps "$out") "; p50[$who]+="$(field p50_us "$out") "; p99[$who]+="$(field p99_us "$out") "; cpu[$who]+="$(field cpu_us "$out") "
        line+="  $who $(field rps "$out") req/s p50 $(field p50_us "$out") us p99 $(field p99_us "$out") us, client $(field cpu_us "$out") us CPU a request (server $(field server_cpu "$out") %);"
    done
    echo "  round $round:$line"
done
cleanup
for metric in rps p50 p99 cpu; do
    case $metric in rps) what="req/s"; unit="req/s" ;; p50) what="p50"; unit="us" ;; p99) what="p99"; unit="us" ;; cpu) what="client CPU a request"; unit="us" ;; esac
    for who in "${CLIENTS[@]}"; do
        declare -n table=$metric
        read -r -a vals <<< "${table[$who]}"
        summary "${LABEL[$who]} $what" vals "$unit"
    done
done
read -r -a own <<< "${rps[loopkit-own]}"; read -r -a curl_ <<< "${rps[loopkit]}"; read -r -a ahc <<< "${rps[ahc]}"
echo "  own engine / AsyncHTTPClient req/s: $(ratio_summary own ahc)   (goal >= 2)"
echo "  curl engine / AsyncHTTPClient req/s: $(ratio_summary curl_ ahc)   (goal >= 2)"
echo "  own engine / curl engine req/s: $(ratio_summary own curl_)"
read -r -a own <<< "${cpu[loopkit-own]}"; read -r -a curl_ <<< "${cpu[loopkit]}"; read -r -a ahc <<< "${cpu[ahc]}"
echo "  curl engine / own engine client CPU a request: $(ratio_summary curl_ own)"
echo "  AsyncHTTPClient / own engine client CPU a request: $(ratio_summary ahc own)"

# 2. A 1 GiB download
mkdir -p "$work/root"
head -c $((1 << 30)) /dev/urandom > "$work/root/big.bin"
echo "GET /files/big.bin, 1 GiB of random bytes (page cache warm), streamed and counted; $ROUNDS rounds, the order rotated each round"
port=$((PORT_BASE + 2))
start "$port" "$LOOPDEMO" serve --log-level warning --root "$work/root"
curl -s -o /dev/null "http://127.0.0.1:$port/files/big.bin"
declare -A mbps=() rss=() dcpu=()
for round in $(seq 1 "$ROUNDS"); do
    line=""
    for who in $(order "$round"); do
        out=$(run_client "$port" --client "$who" --mode download --path /files/big.bin)
        [ "$(field bytes "$out")" = $((1 << 30)) ] || { echo "$who: $out" >&2; exit 1; }
        growth=$(( ($(field hwm_after_kib "$out") - $(field rss_before_kib "$out")) / 1024 ))
        mbps[$who]+="$(field mbps "$out") "; rss[$who]+="$growth "; dcpu[$who]+="$(field cpu_ms_per_gib "$out") "
        line+="  $who $(field mbps "$out") MB/s, client $(field cpu_ms_per_gib "$out") ms CPU, RSS +$growth MiB (server $(field server_cpu "$out") %);"
    done
    echo "  round $round:$line"
done
cleanup
rm -f "$work/root/big.bin"
for metric in mbps rss dcpu; do
    case $metric in mbps) what=""; unit="MB/s" ;; rss) what=" RSS growth"; unit="MiB" ;; dcpu) what=" client CPU for the GiB"; unit="ms" ;; esac
    for who in "${CLIENTS[@]}"; do
        declare -n table=$metric
        read -r -a vals <<< "${table[$who]}"
        summary "${LABEL[$who]}$what" vals "$unit"
    done
done
read -r -a own <<< "${mbps[loopkit-own]}"; read -r -a curl_ <<< "${mbps[loopkit]}"; read -r -a ahc <<< "${mbps[ahc]}"
echo "  own engine / AsyncHTTPClient MB/s: $(ratio_summary own ahc)   (goals: >= 1, RSS growth < 32 MiB)"
echo "  curl engine / AsyncHTTPClient MB/s: $(ratio_summary curl_ ahc)"
echo "  own engine / curl engine MB/s: $(ratio_summary own curl_)"
read -r -a own <<< "${dcpu[loopkit-own]}"; read -r -a curl_ <<< "${dcpu[loopkit]}"; read -r -a ahc <<< "${dcpu[ahc]}"
echo "  curl engine / own engine client CPU for the GiB: $(ratio_summary curl_ own)"
echo "  AsyncHTTPClient / own engine client CPU for the GiB: $(ratio_summary ahc own)"

# 3. HTTP/2: 100 streams on one connection beside HTTP/1.1 with 100 connections
echo "100 concurrent GET /hello, $H2_REQUESTS requests a run: HTTP/2 streams on one connection and HTTP/1.1 on 100 connections; $ROUNDS rounds"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
plain=$((PORT_BASE + 3)); tls=$((PORT_BASE + 4))
declare -A rows=()
names=("LoopKit h2c, 1 connection" "LoopKit HTTP/1.1, 100 connections" "LoopKit own engine HTTP/1.1, 100 connections" "LoopKit h2 (TLS), 1 connection"
       "AHC h2 (TLS), 1 connection" "LoopKit HTTP/1.1 (TLS), 100 connections" "AHC HTTP/1.1 (TLS), 100 connections")
# h2c by prior knowledge needs a libcurl that reuses such a connection: Debian 12's 7.88.1 fails the second request
# on it with CURLE_HTTP2 (16), against nginx as well. Checked here with the curl tool on the same libcurl.
start "$plain" "$LOOPDEMO" serve --log-level warning
plain_pair="loopkit-h1 loopkit-own-h1"
if curl -sf --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$plain/hello" -o /dev/null "http://127.0.0.1:$plain/hello"; then
    plain_pair="loopkit-h2 loopkit-h1 loopkit-own-h1"
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
            loopkit-own-h1) name="LoopKit own engine HTTP/1.1, 100 connections"; out=$(run_client "$plain" --client loopkit-own --mode hello --count "$H2_REQUESTS" --concurrency 100) ;;
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
