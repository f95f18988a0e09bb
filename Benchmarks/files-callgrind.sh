#!/usr/bin/env bash
# User-space instructions and heap allocations per keep-alive file request, LoopKit against nginx, counted by
# callgrind (`make bench-files-callgrind`), with the method of server-callgrind.sh: each server runs under
# `valgrind --tool=callgrind` twice, h2load (HTTP/1.1, one request in flight per connection) sends N requests,
# then 2N; (I(2N) - I(N)) / N is one request's cost with start-up and shutdown cancelled. Instruction counts
# do not move with the machine's load; the kernel's side (open, fstat, sendfile, the socket) is not counted.
# Rows: a 1 KiB file, a 1 KiB precompressed variant (`file.gz`, `Accept-Encoding: gzip`), and a 100 KiB JSON file with `Accept-Encoding: gzip` (zlib level 6 both, nginx's
# `gzip on`). LoopDemo's pool threads are counted with it (callgrind runs every thread).
#   LOOPDEMO: the release binary.  LOOPDEMO_BEFORE: another build (the one before a change), counted too when
#   set.  N: requests of the 1 KiB row (default 2000; the gzip row takes N / 25).  CONNECTIONS: default 4.
#   ROWS: small (the 1 KiB file and its variant row), variant, gzip or both (the default).
set -euo pipefail
cd "$(dirname "$0")/.."
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
N=${N:-2000}
CONNECTIONS=${CONNECTIONS:-4}
PORT=${PORT:-18491}
export SWIFT_DETERMINISTIC_HASHING=1
for tool in valgrind h2load nginx curl; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found" >&2; exit 1; }
done
[ -x "$LOOPDEMO" ] || { echo "$LOOPDEMO not built: swift build -c release --product LoopDemo" >&2; exit 1; }
out=$(mktemp -d)
server=""
stop_server() { if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; server=""; }
trap 'stop_server; rm -rf "$out"' EXIT
# Valgrind 3.19 cannot read the DWARF 5 debug info Swift 6 emits: count copies without it.
objcopy --strip-debug "$LOOPDEMO" "$out/LoopDemo"
[ -n "${LOOPDEMO_BEFORE:-}" ] && objcopy --strip-debug "$LOOPDEMO_BEFORE" "$out/LoopDemo-before"

root="$out/root"
mkdir -p "$root" "$out/nginx"
head -c 1024 /dev/urandom > "$root/small.bin"
# The variant row: a 1 KiB precompressed variant beside its file, sent to a client taking gzip (nginx: gzip_static).
head -c 4096 /dev/urandom > "$root/page.bin"
head -c 1024 /dev/urandom > "$root/page.bin.gz"
# 100 KiB of JSON records, as compression-bench.sh makes them.
python3 - "$root/data.json" <<'PY'
import json, sys
records, size, i = [], 0, 0
while size < 100 * 1024 - 200:
    record = {"id": i, "name": f"user {i * 7919 % 100003}", "email": f"user{i * 31 % 9973}@example.org",
              "active": i % 3 != 0, "score": round((i * 2654435761 % 1000003) / 1000.0, 3), "tags": ["a", "b", "c"][: i % 4]}
    records.append(record); size += len(json.dumps(record)) + 1; i += 1
open(sys.argv[1], "w").write(json.dumps(records))
PY
cat > "$out/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $out/nginx/nginx.pid;
error_log $out/nginx/error.log error;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    etag on;
    keepalive_requests 100000000;
    client_body_temp_path $out/nginx;
    types { application/json json; }
    default_type application/octet-stream;
    gzip on;
    gzip_comp_level 6;
    gzip_types application/json;
    gzip_vary on;
    server {
        listen 127.0.0.1:$PORT;
        location /files/ { alias $root/; gzip_static on; }
    }
}
CONF

# profile SIDE PATH REQUESTS [HEADER]: runs SIDE under callgrind, sends REQUESTS for PATH on CONNECTIONS
# connections, stops the server; prints "instructions allocations".
profile() {
    local side=$1 path=$2 requests=$3 header=${4:-} file="$out/callgrind.out"
    rm -f "$file"
    case $side in
        loopkit) valgrind --tool=callgrind --callgrind-out-file="$file" "$out/LoopDemo" serve --port "$PORT" --log-level warning --root "$root" > /dev/null 2> "$out/log" & ;;
        before) valgrind --tool=callgrind --callgrind-out-file="$file" "$out/LoopDemo-before" serve --port "$PORT" --log-level warning --root "$root" > /dev/null 2> "$out/log" & ;;
        nginx) valgrind --tool=callgrind --callgrind-out-file="$file" nginx -p "$out/nginx" -c "$out/nginx/nginx.conf" > /dev/null 2> "$out/log" & ;;
    esac
    server=$!
    for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT$path" && break; sleep 0.1; done
    local headers=()
    [ -n "$header" ] && headers=(-H "$header")
    h2load --h1 -n "$requests" -c "$CONNECTIONS" -m 1 "${headers[@]}" "http://127.0.0.1:$PORT$path" > "$out/h2load" 2>&1
    grep -q "$requests succeeded, 0 failed" "$out/h2load" || { cat "$out/h2load" >&2; exit 1; }
    stop_server
    local instructions
    instructions=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/log" | tail -1)
    awk -v ins="$instructions" '
        /^c?fn=/ { s = $0; iscall = (substr(s, 1, 1) == "c"); sub(/^c?fn=/, "", s); id = s; sub(/ .*/, "", id)
                  name = s; sub(/^\([0-9]+\) ?/, "", name)
                  if (name != "") names[id] = name; if (iscall) current = names[id]; next }
        /^calls=/ { n = $0; sub(/^calls=/, "", n); sub(/ .*/, "", n); calls[current] += n; next }
        END {
            for (f in calls) {
                base = f; sub(/[\047][0-9]+$/, "", base)
                if (base ~ /^(malloc|calloc|realloc|posix_memalign|aligned_alloc)$/) a += calls[f]
            }
            printf "%s %d\n", ins, a
        }' "$file"
}

sides="loopkit nginx"
[ -n "${LOOPDEMO_BEFORE:-}" ] && sides="loopkit before nginx"
echo "Per keep-alive file request (callgrind, (I(2N) - I(N)) / N; h2load --h1 -c $CONNECTIONS -m 1); valgrind $(valgrind --version | sed 's/valgrind-//')"
echo
printf '%-44s | %-28s | %13s | %8s\n' "server" "request" "instructions" "allocs"
printf '%s\n' "---------------------------------------------|------------------------------|---------------|---------"
row() {
    local path=$1 label=$2 n=$3 header=${4:-}
    for side in $sides; do
        read -r i1 a1 < <(profile "$side" "$path" "$n" "$header")
        read -r i2 a2 < <(profile "$side" "$path" $((2 * n)) "$header")
        case $side in
            loopkit) name="LoopDemo serve --root" ;;
            before) name="LoopDemo serve --root (LOOPDEMO_BEFORE)" ;;
            nginx) name="nginx $(nginx -v 2>&1 | sed 's/.*nginx\///') (one process, sendfile on)" ;;
        esac
        awk -v s="$name" -v r="$label" -v n="$n" -v i1="$i1" -v i2="$i2" -v a1="$a1" -v a2="$a2" 'BEGIN {
            printf "%-44s | %-28s | %13.0f | %8.2f\n", s, r, (i2 - i1) / n, (a2 - a1) / n }'
    done
}
[ "${ROWS:-both}" = gzip ] || [ "${ROWS:-both}" = variant ] || row /files/small.bin "1 KiB file" "$N"
case ${ROWS:-both} in both|small|variant) row /files/page.bin "1 KiB .gz variant (gzip_static)" "$N" "Accept-Encoding: gzip" ;; esac
[ "${ROWS:-both}" = small ] || [ "${ROWS:-both}" = variant ] || row /files/data.json "100 KiB JSON, gzip" $((N / 25)) "Accept-Encoding: gzip"
