#!/usr/bin/env bash
# Instructions per keep-alive `GET /hello`, LoopKit against nginx, counted by callgrind (`make
# bench-callgrind-http`). Each server runs under `valgrind --tool=callgrind` twice; h2load (HTTP/1.1, one
# request in flight per connection) sends N requests, then 2N; (I(2N) - I(N)) / N is the cost of one request
# with start-up, warm-up and shutdown cancelled. The same is done for heap allocations (malloc, calloc,
# realloc, posix_memalign calls) and swift_retain / swift_release calls, read from the same profiles.
# Instruction counts do not move with the machine's load. Both servers do one read and one writev a request.
#   LOOPDEMO: the release binary (default .build/release/LoopDemo).  N: requests (default 20000).
#   CONNECTIONS: the connection counts to run (default "4 1").  NGINX_PEER: nginx's launcher.
#   SIDES: the servers to count (default "loopkit loopkit-info nginx").
#   PROTOCOL: h1 (default) or h2c (HTTP/2 by prior knowledge, one stream in flight per connection; nginx with
#   `listen … http2`): `make bench-callgrind-h2`.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
N=${N:-20000}
CONNECTIONS=${CONNECTIONS:-4 1}
PORT=${PORT:-18490}
PROTOCOL=${PROTOCOL:-h1}
case $PROTOCOL in
    h1) H2LOAD_PROTOCOL=(--h1); NGINX_LISTEN="" ;;
    h2c) H2LOAD_PROTOCOL=(); NGINX_LISTEN=" http2" ;;
    *) echo "PROTOCOL is h1 or h2c" >&2; exit 1 ;;
esac
export SWIFT_DETERMINISTIC_HASHING=1
for tool in valgrind h2load nginx callgrind_annotate; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found" >&2; exit 1; }
done
[ -x "$LOOPDEMO" ] || { echo "$LOOPDEMO not built: swift build -c release --product LoopDemo" >&2; exit 1; }
out=$(mktemp -d)
server=""
stop_server() { if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; server=""; }
trap 'stop_server; rm -rf "$out"' EXIT
# Valgrind 3.19 cannot read the DWARF 5 debug info Swift 6 emits: count a copy without it.
objcopy --strip-debug "$LOOPDEMO" "$out/LoopDemo"

nginx_conf() {
    mkdir -p "$out/nginx"
    cat > "$out/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $out/nginx/nginx.pid;
error_log $out/nginx/error.log error;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $out/nginx;
    server {
        listen 127.0.0.1:$PORT$NGINX_LISTEN;
        location = /hello { default_type text/plain; return 200 "Hello, World!"; }
    }
}
CONF
}

# profile SIDE CONNECTIONS REQUESTS: runs SIDE under callgrind, sends REQUESTS on CONNECTIONS connections,
# stops the server; prints "instructions allocations retains releases".
profile() {
    local side=$1 connections=$2 requests=$3 file="$out/callgrind.out"
    rm -f "$file"
    case $side in
        loopkit) valgrind --tool=callgrind --callgrind-out-file="$file" "$out/LoopDemo" serve --port "$PORT" --log-level warning > /dev/null 2> "$out/log" & ;;
        loopkit-info) valgrind --tool=callgrind --callgrind-out-file="$file" "$out/LoopDemo" serve --port "$PORT" --log-level info > /dev/null 2> "$out/log" & ;;
        nginx) nginx_conf; valgrind --tool=callgrind --callgrind-out-file="$file" nginx -p "$out/nginx" -c "$out/nginx/nginx.conf" > /dev/null 2> "$out/log" & ;;
    esac
    server=$!
    for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/hello" && break; sleep 0.1; done
    h2load "${H2LOAD_PROTOCOL[@]}" -n "$requests" -c "$connections" -m 1 "http://127.0.0.1:$PORT/hello" > "$out/h2load" 2>&1
    grep -q "succeeded, 0 failed" "$out/h2load" || grep -q "$requests succeeded" "$out/h2load" || { cat "$out/h2load" >&2; exit 1; }
    stop_server
    local instructions
    instructions=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/log" | tail -1)
    # Calls into each function, summed over every caller (callgrind's compressed names: "fn=(id) name" or
    # "cfn=(id) name" the first time, "(id)" alone after).
    awk -v ins="$instructions" '
        /^c?fn=/ { s = $0; iscall = (substr(s, 1, 1) == "c"); sub(/^c?fn=/, "", s); id = s; sub(/ .*/, "", id)
                  name = s; sub(/^\([0-9]+\) ?/, "", name)
                  if (name != "") names[id] = name; if (iscall) current = names[id]; next }
        /^calls=/ { n = $0; sub(/^calls=/, "", n); sub(/ .*/, "", n); calls[current] += n; next }
        END {
            for (f in calls) {
                base = f; sub(/[\047][0-9]+$/, "", base)  # a recursion level of the same function (name, a quote, 2)
                if (base ~ /^(malloc|calloc|realloc|posix_memalign|aligned_alloc)$/) a += calls[f]
                else if (base == "swift_retain") r += calls[f]
                else if (base == "swift_release") l += calls[f]
            }
            printf "%s %d %d %d\n", ins, a, r, l
        }' "$file"
}

echo "Per keep-alive GET /hello over $PROTOCOL (callgrind, (I(2N) - I(N)) / N, N = $N; h2load ${H2LOAD_PROTOCOL[*]} -m 1); valgrind $(valgrind --version | sed 's/valgrind-//'), $(nproc) cores"
echo
printf '%-40s | %11s | %13s | %8s | %8s | %s\n' "server" "connections" "instructions" "allocs" "retains" "releases"
printf '%s\n' "-----------------------------------------|-------------|---------------|----------|----------|---------"
for connections in $CONNECTIONS; do
    for side in ${SIDES:-loopkit loopkit-info nginx}; do
        read -r i1 a1 r1 l1 < <(profile "$side" "$connections" "$N")
        read -r i2 a2 r2 l2 < <(profile "$side" "$connections" $((2 * N)))
        case $side in
            loopkit) label="LoopDemo serve (log at warning)" ;;
            loopkit-info) label="LoopDemo serve (access log at info)" ;;
            nginx) label="nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') (one process, no log)" ;;
        esac
        awk -v l="$label" -v c="$connections" -v n="$N" -v i1="$i1" -v i2="$i2" -v a1="$a1" -v a2="$a2" \
            -v r1="$r1" -v r2="$r2" -v l1="$l1" -v l2="$l2" 'BEGIN {
            printf "%-40s | %11d | %13.0f | %8.2f | %8.2f | %.2f\n", l, c, (i2 - i1) / n, (a2 - a1) / n, (r2 - r1) / n, (l2 - l1) / n }'
    done
done
