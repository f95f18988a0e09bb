#!/usr/bin/env bash
# make bench-h2: keep-alive GET /hello over HTTP/2 with h2load (nghttp2-client, one thread, -c 64 -m 100) on
# CLIENT_CORE against LoopKitHTTP (LoopDemo serve), a minimal swift-nio-http2 server (Benchmarks' NIOHTTP2Peer, one
# event loop), nginx (one worker, `http2`) and h2o (Debian's, one thread),
# each pinned to SERVER_CORE, alternated ROUNDS times (the order rotates each round); the median of the per-round
# ratios with their spread. First h2c (prior knowledge), then h2 over TLS (ALPN; one throwaway ECDSA P-256
# certificate made here, as https-bench.sh). h2load is single-threaded: its CPU share is printed beside each run
# (a client near 100 % is the limit, not the server).
# Then, LoopKitHTTP against swift-nio-http2 only (alternated, BULK_ROUNDS and IDLE_ROUNDS rounds, default 3):
# - one h2c stream carrying a 1 GiB POST /upload (zeros, counted and hashed by the server as they arrive), sent by
#   nghttp (`-d FILE`, the file in BULK_DIR, /dev/shm by default) on CLIENT_CORE: MB/s, the server's CPU for it, the
#   client's CPU share (near 100 %: the client is the limit), and the server's RSS growth (VmHWM after the upload
#   minus VmRSS before it; goal < 32 MiB);
# - memory per idle h2c connection: IDLE (10000) connections, each with the preface, both SETTINGS and one
#   GET /hello done (h2-idle-clients.py on CLIENT_CORE), then idle: the server's RSS growth / IDLE (goal <= NIO's).
# PARTS (default "rps bulk idle") picks the sections.
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/bench-lib.sh
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
NIO_PEER=${NIO_PEER:-Benchmarks/.build/release/NIOHTTP2Peer}
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-200000}
PORT_BASE=${PORT_BASE:-18300}
PARTS=${PARTS:-rps bulk idle}
BULK_ROUNDS=${BULK_ROUNDS:-3}
IDLE_ROUNDS=${IDLE_ROUNDS:-3}
IDLE=${IDLE:-10000}
BULK_DIR=${BULK_DIR:-/dev/shm}
ulimit -n "$(ulimit -Hn)"  # IDLE connections: the server holds one descriptor each (the client raises its own)
work=$(mktemp -d /tmp/loopkit-h2-bench.XXXXXX)
bulk_file=""
trap 'cleanup; rm -rf "$work"; [ -z "$bulk_file" ] || rm -f "$bulk_file"' EXIT
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
    [[ " $PARTS " == *" rps "* ]] || break
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

# bulk_round WHO: one 1 GiB POST /upload on one h2c stream (nghttp -d, pinned to CLIENT_CORE) to a fresh server;
# appends "MB/s server-CPU-seconds client-CPU-% RSS-growth-MiB" to the array named WHO_bulk, prints the round.
bulk_round() {
    local who=$1 port=$((PORT_BASE + 20 + ${offset[$1]}))
    launch "$who" "$port" plain
    sleep 0.3
    local before ticks0 t0 out t1 ticks1 peak
    before=$(rss_kib); ticks0=$(cpu_ticks)
    t0=$(date +%s.%N)
    out=$( { /usr/bin/time -f "cpu=%P" taskset -c "$CLIENT_CORE" nghttp -d "$bulk_file" "http://127.0.0.1:$port/upload"; } 2>&1)
    t1=$(date +%s.%N)
    ticks1=$(cpu_ticks); peak=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
    cleanup
    grep -q "^received 1073741824 sha256 49bc20df15e412a64472421e13fe86ff1c5165e18b2afccf160d4dc19fe68a14$" <<< "$out" ||
        { echo "${label[$who]}: wrong answer to the upload: $out" >&2; exit 1; }
    local client; client=$(sed -n 's/^cpu=\([0-9]*\)%/\1/p' <<< "$out")
    local row; row=$(awk -v t0="$t0" -v t1="$t1" -v a="$ticks0" -v b="$ticks1" -v hz="$(getconf CLK_TCK)" -v c="$client" \
        -v before="$before" -v peak="$peak" 'BEGIN { printf "%.0f %.2f %s %.1f", 1073.741824 / (t1 - t0), (b - a) / hz, c, (peak - before) / 1024 }')
    declare -n into=${who}_bulk; into+=("$row"); unset -n into
    read -r mbs cpu client growth <<< "$row"
    printf '  %-16s %5s MB/s   server CPU %5s s   nghttp CPU %3s %%   server RSS growth %5s MiB (VmHWM %d KiB after, VmRSS %d KiB before)\n' \
        "${label[$who]}" "$mbs" "$cpu" "$client" "$growth" "$peak" "$before"
}

# field N ROWS...: the Nth field of each row, one a line.
field() { local n=$1; shift; for row in "$@"; do awk -v n="$n" '{print $n}' <<< "$row"; done; }

if [[ " $PARTS " == *" bulk "* ]]; then
    bulk_file=$(mktemp "$BULK_DIR/loopkit-h2-upload.XXXXXX")
    head -c 1073741824 /dev/zero > "$bulk_file"
    echo "One h2c stream carrying a 1 GiB POST /upload (nghttp -d, a file in $BULK_DIR; the server counts and hashes it as it arrives); server on core $SERVER_CORE, nghttp on core $CLIENT_CORE; $BULK_ROUNDS rounds, alternated; load $(cut -d' ' -f1-3 /proc/loadavg)"
    lk_bulk=(); nio_bulk=()
    for round in $(seq 1 "$BULK_ROUNDS"); do
        if [ $((round % 2)) = 1 ]; then bulk_round lk; bulk_round nio; else bulk_round nio; bulk_round lk; fi
    done
    lkmbs=(); niombs=(); lkcpu=(); niocpu=()
    mapfile -t lkmbs < <(field 1 "${lk_bulk[@]}"); mapfile -t niombs < <(field 1 "${nio_bulk[@]}")
    mapfile -t lkcpu < <(field 2 "${lk_bulk[@]}"); mapfile -t niocpu < <(field 2 "${nio_bulk[@]}")
    for who in lk nio; do
        declare -n rows=${who}_bulk
        printf '  %-16s %5s MB/s median   server CPU %s s median   nghttp CPU %s %% median   RSS growth %s MiB median (max %s)\n' \
            "${label[$who]}" "$(field 1 "${rows[@]}" | median)" "$(field 2 "${rows[@]}" | median)" \
            "$(field 3 "${rows[@]}" | median)" "$(field 4 "${rows[@]}" | median)" "$(field 4 "${rows[@]}" | sort -g | tail -1)"
        unset -n rows
    done
    echo "  LoopKitHTTP / swift-nio-http2, MB/s: $(ratio_summary lkmbs niombs)"
    echo "  swift-nio-http2 / LoopKitHTTP, server CPU per GiB: $(ratio_summary niocpu lkcpu)   (above 1: LoopKit spends less)"
    echo "  (goal: LoopKitHTTP's RSS growth < 32 MiB)"
    rm -f "$bulk_file"; bulk_file=""
fi

# idle_round WHO: IDLE idle h2c connections to a fresh server; appends the KiB per connection to WHO_idle.
idle_round() {
    local who=$1 port=$((PORT_BASE + 30 + ${offset[$1]}))
    launch "$who" "$port" plain
    idle_rss_row "${label[$who]}" "$IDLE" python3 Benchmarks/h2-idle-clients.py "$port" "$IDLE" > "$work/idle-row"
    cat "$work/idle-row"
    local kib; kib=$(sed -n 's/.* \([0-9.]*\) KiB per connection.*/\1/p' "$work/idle-row")
    [ -n "$kib" ] || { echo "no idle figure for ${label[$who]}" >&2; exit 1; }
    declare -n into=${who}_idle; into+=("$kib"); unset -n into
}

if [[ " $PARTS " == *" idle "* ]]; then
    echo "Memory per idle h2c connection ($IDLE open; on each the preface, both SETTINGS and one GET /hello answered, then idle; server RSS growth / $IDLE; h2-idle-clients.py on core $CLIENT_CORE); $IDLE_ROUNDS rounds, alternated; load $(cut -d' ' -f1-3 /proc/loadavg)"
    lk_idle=(); nio_idle=()
    for round in $(seq 1 "$IDLE_ROUNDS"); do
        if [ $((round % 2)) = 1 ]; then idle_round lk; idle_round nio; else idle_round nio; idle_round lk; fi
    done
    for who in lk nio; do
        declare -n values=${who}_idle
        printf '  %-16s %5s KiB per connection median (rounds: %s)\n' "${label[$who]}" "$(printf '%s\n' "${values[@]}" | median)" "${values[*]}"
        unset -n values
    done
    echo "  swift-nio-http2 / LoopKitHTTP, KiB per idle connection: $(ratio_summary nio_idle lk_idle)   (goal >= 1: LoopKit's <= NIO's)"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) at the end"
