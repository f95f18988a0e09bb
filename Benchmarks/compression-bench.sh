#!/usr/bin/env bash
# Response compression (`make bench-compression`): a 100 KiB JSON file served by `LoopDemo serve --root`
# (its files go through CompressionMiddleware: read on the pool, compressed as streamed, a flush per write)
# as identity, gzip, br and zstd, against nginx (Debian's, one process, `sendfile on`, `gzip on` at the same
# zlib level, 6, so the gzip rows compare the same work; nginx has no br or zstd without extra modules).
# Server pinned to core 0, wrk -t1 -c64 to core 1 with `Accept-Encoding: CODING`; servers alternated round
# by round (ROUNDS, default 3); the ratio is the body's bytes over the file's, measured with curl.
#   LOOPDEMO: the release binary.  DURATION: wrk's -d (default 5s).  LOOPDEMO_BEFORE: another build of it
#   (the one before a change), run in the same rounds of the gzip row when set.  CODINGS: the rows to run.
set -euo pipefail
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-3}
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
PORT_BASE=${PORT_BASE:-18460}
# shellcheck source=bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"

root=$(mktemp -d)
nginx_dir=$(mktemp -d)
trap 'cleanup; rm -rf "$root" "$nginx_dir"' EXIT
# 100 KiB of JSON records (deterministic), like an API's list response.
python3 - "$root/data.json" <<'PY'
import json, sys
records, size, i = [], 0, 0
while size < 100 * 1024 - 200:
    record = {"id": i, "name": f"user {i * 7919 % 100003}", "email": f"user{i * 31 % 9973}@example.org",
              "active": i % 3 != 0, "score": round((i * 2654435761 % 1000003) / 1000.0, 3), "tags": ["a", "b", "c"][: i % 4]}
    records.append(record); size += len(json.dumps(record)) + 1; i += 1
open(sys.argv[1], "w").write(json.dumps(records))
PY
file_bytes=$(stat -c %s "$root/data.json")

cat > "$nginx_dir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $nginx_dir/nginx.pid;
error_log $nginx_dir/error.log error;
events { worker_connections 20000; }
http {
    access_log off;
    sendfile on;
    etag on;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    types { application/json json; }
    gzip on;
    gzip_comp_level 6;
    gzip_min_length 1024;
    gzip_types application/json;
    gzip_vary on;
    server {
        listen 127.0.0.1:\$port;
        location /files/ { alias $root/; }
        location = /hello { return 200 "ok"; }
    }
}
CONF
# nginx-compression-peer PORT (run through sh: the port is its $1)
cat > "$nginx_dir/peer.sh" <<'SH'
#!/bin/sh
set -eu
dir=$(dirname "$0"); port=$1
sed "s/\$port/$port/" "$dir/nginx.conf" > "$dir/nginx-$port.conf"
nginx -p "$dir" -c "$dir/nginx-$port.conf" 2>/dev/null &
server=$!
trap 'kill -TERM $server 2>/dev/null || true; wait $server 2>/dev/null || true; exit 0' TERM INT
for _ in $(seq 1 200); do
    curl -s "http://127.0.0.1:$port/hello" > /dev/null && { echo "listening on 127.0.0.1:$port"; break; }
    sleep 0.05
done
wait $server
SH

# one_run PORT CODING SERVER...: starts the server, prints "req/s bytes-per-response".
one_run() {
    local port=$1 coding=$2; shift 2
    start "$port" "$@"
    local url="http://127.0.0.1:$port/files/data.json"
    local header=() bytes
    [ "$coding" != identity ] && header=(-H "Accept-Encoding: $coding")
    bytes=$(curl -s "${header[@]}" -o /dev/null -w '%{size_download}' "$url")
    local rps
    rps=$(taskset -c "$CLIENT_CORE" wrk -t1 -c64 -d"$DURATION" "${header[@]}" "$url" | awk '/^Requests\/sec:/ {print $2}')
    cleanup
    echo "$rps $bytes"
}

echo "Response compression of a ${file_bytes}-byte JSON file, wrk -t1 -c64, server on core $SERVER_CORE, wrk on core $CLIENT_CORE"
echo "($ROUNDS alternated rounds of $DURATION; median req/s; ratio = compressed bytes / file bytes)"
for coding in ${CODINGS:-identity gzip br zstd}; do
    lk=(); ngx=(); prior=(); lk_bytes=0; ngx_bytes=0
    for round in $(seq 1 "$ROUNDS"); do
        read -r rps bytes < <(one_run $((PORT_BASE + 1)) "$coding" "$LOOPDEMO" serve --log-level warning --root "$root")
        lk+=("$rps"); lk_bytes=$bytes
        if [ "$coding" = identity ] || [ "$coding" = gzip ]; then
            read -r rps bytes < <(one_run $((PORT_BASE + 2)) "$coding" sh "$nginx_dir/peer.sh")
            ngx+=("$rps"); ngx_bytes=$bytes
        fi
        if [ "$coding" = gzip ] && [ -n "${LOOPDEMO_BEFORE:-}" ]; then
            read -r rps bytes < <(one_run $((PORT_BASE + 3)) "$coding" "$LOOPDEMO_BEFORE" serve --log-level warning --root "$root")
            prior+=("$rps")
        fi
    done
    awk -v c="$coding" -v r="$(printf '%s\n' "${lk[@]}" | median)" -v b="$lk_bytes" -v f="$file_bytes" \
        'BEGIN { printf "  LoopKitHTTP %-9s %10.0f req/s   %7d bytes   ratio %.3f\n", c, r, b, b / f }'
    if [ ${#ngx[@]} -gt 0 ]; then
        awk -v c="$coding" -v r="$(printf '%s\n' "${ngx[@]}" | median)" -v b="$ngx_bytes" -v f="$file_bytes" \
            'BEGIN { printf "  nginx       %-9s %10.0f req/s   %7d bytes   ratio %.3f\n", c, r, b, b / f }'
        printf '  LoopKitHTTP / nginx, %s: %s\n' "$coding" "$(ratio_summary lk ngx)"
    fi
    if [ ${#prior[@]} -gt 0 ]; then
        printf '  before (%s) %-9s %10.0f req/s   rounds: %s\n' "$LOOPDEMO_BEFORE" "$coding" "$(printf '%s\n' "${prior[@]}" | median)" "${prior[*]}"
        printf '  LoopKitHTTP / before, %s: %s; before / nginx: %s\n' "$coding" "$(ratio_summary lk prior)" "$(ratio_summary prior ngx)"
    fi
done
