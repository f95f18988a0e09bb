#!/usr/bin/env bash
# LoopKitHTTP over TLS against a minimal NIOHTTP1 + NIOSSL server and nginx, in one run (`make bench-https`).
# One throwaway ECDSA P-256 certificate (made here with openssl) for all three; each server pinned to core 0,
# the load (wrk, Python's ssl, curl) pinned to core 1; servers alternated round by round (ROUNDS, default 5).
#   LOOPDEMO, NIO_PEER: the release binaries.  DURATION: wrk's -d (default 5s).  IDLE: idle connections (10000).
set -euo pipefail
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-5}
IDLE=${IDLE:-10000}
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
NIO_PEER=${NIO_PEER:-Benchmarks/.build/release/NIOHTTPPeer}
PORT_BASE=${PORT_BASE:-18500}
here=$(dirname "$0")
# shellcheck source=bench-lib.sh
source "$here/bench-lib.sh"

ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d /tmp/loopkit-https-bench.XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# launch WHO PORT: starts LoopKitHTTP (lk), NIOHTTP1 + NIOSSL (nio) or nginx, pinned, serving HTTPS on PORT.
launch() {
    local who=$1 port=$2
    case $who in
        lk) start "$port" "$LOOPDEMO" serve --log-level warning --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" ;;
        nio) start "$port" "$NIO_PEER" --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" ;;
        nginx)
            # One process (no master), one worker's worth of connections, no access log: the C anchor.
            mkdir -p "$work/nginx-$port"
            cat > "$work/nginx-$port/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx-$port/nginx.pid;
error_log $work/nginx-$port/error.log error;
events { worker_connections 20000; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    client_body_temp_path $work/nginx-$port;
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $work/cert.pem;
        ssl_certificate_key $work/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        location = /hello { default_type text/plain; return 200 "Hello, World!"; }
    }
}
CONF
            taskset -c "$SERVER_CORE" nginx -p "$work/nginx-$port" -c "$work/nginx-$port/nginx.conf" 2>/dev/null &
            pid=$!
            for _ in $(seq 1 200); do
                curl -s --cacert "$work/cert.pem" "https://localhost:$port/hello" --resolve "localhost:$port:127.0.0.1" >/dev/null && return 0
                sleep 0.05
            done
            echo "nginx did not start" >&2; exit 1 ;;
    esac
}

label() {
    case $1 in
        lk) echo "LoopKitHTTP + OpenSSL 3 (1 loop)" ;;
        nio) echo "NIOHTTP1 + NIOSSL (1 event loop)" ;;
        nginx) echo "nginx + OpenSSL 3 (1 process)" ;;
    esac
}

# handshake_facts WHO PORT: the protocol and cipher the server picks for an OpenSSL 3 client, and whether a
# second connection offering the first one's session resumes it (wrk never offers one: each of its
# connections is a full handshake).
handshake_facts() {
    local facts
    facts=$(openssl s_client -connect "127.0.0.1:$2" -servername localhost -CAfile "$work/cert.pem" </dev/null 2>/dev/null |
        awk '/^New, / {print $2, $5; exit}')
    echo "$facts"
}

# wrk_rps PORT [wrk args]: one wrk run on CLIENT_CORE; prints "requests/s server-CPU-µs-per-request".
wrk_rps() {
    local port=$1; shift
    local before after out
    before=$(cpu_ticks)
    out=$(taskset -c "$CLIENT_CORE" wrk -t1 -c64 -d"$DURATION" "$@" "https://127.0.0.1:$port/hello")
    after=$(cpu_ticks)
    awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
        /^Requests\/sec:/ {rps = $2} /requests in/ {n = $1} /Non-2xx|Socket errors/ {bad = bad " " $0}
        END {printf "%s %.1f%s\n", rps, (n > 0 ? ticks / hz / n * 1e6 : 0), (bad ? " #" bad : "")}' <<< "$out"
}

# alternated TITLE UNIT [wrk args]: ROUNDS rounds of lk, nio, nginx, one after another in each round.
alternated() {
    local title=$1 unit=$2; shift 2
    local lk=() nio=() nginx=() lkcpu=() niocpu=() nginxcpu=()
    local port=$((PORT_BASE + 1))
    for _ in $(seq 1 "$ROUNDS"); do
        for who in lk nio nginx; do
            launch "$who" "$port"
            local line; line=$(wrk_rps "$port" "$@")
            cleanup
            local -n values=$who cpu=${who}cpu
            values+=("${line%% *}")
            cpu+=("$(cut -d' ' -f2 <<< "$line")")
            case $line in *"#"*) echo "  warning: $(label "$who"): ${line#*#}" ;; esac
        done
    done
    echo "$title ($ROUNDS alternated rounds of $DURATION, wrk -t1 -c64; median $unit; ratio = median of per-round ratios to NIOSSL, min-max)"
    for who in lk nio nginx; do
        local -n values=$who cpu=${who}cpu
        printf '  %-36s %9.0f %s   %sx NIOSSL   server CPU %s us/req   rounds: %s\n' "$(label "$who")" \
            "$(printf '%s\n' "${values[@]}" | median)" "$unit" "$(ratio_summary "$who" nio)" \
            "$(printf '%s\n' "${cpu[@]}" | median)" "${values[*]}"
    done
}

# idle_row WHO: the server's RSS growth per idle TLS keep-alive connection with IDLE open, each of which has
# been answered one GET /hello (tls-idle-clients.py on CLIENT_CORE).
idle_row() {
    local who=$1 port=$((PORT_BASE + 10))
    launch "$who" "$port"
    idle_rss_row "$(label "$who")" "$IDLE" python3 "$here/tls-idle-clients.py" "$port" "$IDLE" "$work/cert.pem"
}

# bulk WHO: 1 GiB of zeros streamed by curl as an HTTPS POST /upload body (count + SHA-256 answered);
# prints MB/s, or "WRONG" when the answer is not the expected count and digest.
bulk() {
    local who=$1 port=$((PORT_BASE + 20))
    launch "$who" "$port"
    local t0 t1 out
    t0=$(date +%s.%N)
    out=$(taskset -c "$CLIENT_CORE" sh -c "head -c 1073741824 /dev/zero | curl -s --cacert '$work/cert.pem' \
        --resolve localhost:$port:127.0.0.1 --tls13-ciphers TLS_AES_128_GCM_SHA256 -X POST -T - https://localhost:$port/upload")
    t1=$(date +%s.%N)
    cleanup
    if [ "$out" = "received 1073741824 sha256 49bc20df15e412a64472421e13fe86ff1c5165e18b2afccf160d4dc19fe68a14" ]; then
        awk -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.0f\n", 1073.741824 / (t1 - t0)}'
    else
        echo "WRONG"
    fi
}

echo "== HTTPS: server pinned to core $SERVER_CORE, load on core $CLIENT_CORE (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "ECDSA P-256 certificate; what an OpenSSL 3 client negotiates with each server (protocol, cipher):"
for who in lk nio nginx; do
    launch "$who" $((PORT_BASE + 30)); printf '  %-36s %s\n' "$(label "$who")" "$(handshake_facts "$who" $((PORT_BASE + 30)))"; cleanup
done
alternated "HTTPS GET /hello, keep-alive" "req/s"
alternated "HTTPS GET /hello, Connection: close (one new TLS 1.3 connection per request)" "conn/s" -H "Connection: close"
echo "Memory per idle TLS keep-alive connection ($IDLE open, one GET /hello answered on each; server RSS growth / $IDLE)"
for who in lk nio nginx; do idle_row "$who"; done
echo "1 GiB HTTPS POST /upload on one connection (curl, TLS_AES_128_GCM_SHA256; $ROUNDS alternated rounds, median MB/s)"
lkb=(); niob=()
for _ in $(seq 1 "$ROUNDS"); do lkb+=("$(bulk lk)"); niob+=("$(bulk nio)"); done
printf '  %-36s %6s MB/s   %sx NIOSSL   rounds: %s\n' "$(label lk)" "$(printf '%s\n' "${lkb[@]}" | median)" "$(ratio_summary lkb niob)" "${lkb[*]}"
printf '  %-36s %6s MB/s   rounds: %s\n' "$(label nio)" "$(printf '%s\n' "${niob[@]}" | median)" "${niob[*]}"
