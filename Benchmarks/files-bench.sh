#!/usr/bin/env bash
# Static files (`make bench-files`): `LoopDemo serve --root DIR` (its `/files/` route: validators, ranges,
# sendfile(2) on a plain socket) against nginx (Debian's, one process, `sendfile on; etag on;`, no
# open_file_cache: it opens, stats and closes the file per request; LoopKit keeps a small file's bytes and
# checks them with one stat a request) and Hummingbird 2's FileMiddleware (HummingbirdPeer --root, its
# defaults: reads on NIOThreadPool, no sendfile). Servers on core 0, clients on core 1, one server at a time,
# alternated round by round.
#   1. A 1 KiB file, keep-alive, wrk -t1 -c64 -d DURATION, ROUNDS rounds (default 5): median req/s, and the
#      median of the per-round ratios with their min-max, against nginx and against Hummingbird.
#   2. A 100 MiB file over one connection: curl fetches it REPEAT times (default 8) on one keep-alive
#      connection, BIG_ROUNDS rounds (default 3): median MB/s (10^6 bytes), and the server's CPU seconds
#      (utime + stime, /proc/PID/stat) per GiB sent, summed over the round.
#   LOOPDEMO: the release binary (default .build/release/LoopDemo).  LOOPDEMO_BEFORE: another build of it
#   (the one before a change), run in the same rounds of the 1 KiB file when set.  HB_PEER: Hummingbird's
#   (default Benchmarks/.build/release/HummingbirdPeer; `make bench-files` builds it).
set -euo pipefail
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-5}
BIG_ROUNDS=${BIG_ROUNDS:-3}
REPEAT=${REPEAT:-8}
LOOPDEMO=${LOOPDEMO:-.build/release/LoopDemo}
HB_PEER=${HB_PEER:-Benchmarks/.build/release/HummingbirdPeer}
PORT_BASE=${PORT_BASE:-18470}
# shellcheck source=bench-lib.sh
source "$(dirname "$0")/bench-lib.sh"
for tool in wrk nginx curl taskset; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found" >&2; exit 1; }
done
[ -x "$LOOPDEMO" ] || { echo "$LOOPDEMO not built: swift build -c release --product LoopDemo" >&2; exit 1; }
[ -x "$HB_PEER" ] || { echo "$HB_PEER not built: cd Benchmarks && swift build -c release --product HummingbirdPeer" >&2; exit 1; }

root=$(mktemp -d)
nginx_dir=$(mktemp -d)
trap 'cleanup; rm -rf "$root" "$nginx_dir"' EXIT
head -c 1024 /dev/urandom > "$root/small.bin"
head -c $((100 * 1024 * 1024)) /dev/urandom > "$root/big.bin"
cat "$root/small.bin" "$root/big.bin" > /dev/null  # both in the page cache before the first round

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
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:\$port;
        location /files/ { alias $root/; }
        location = /hello { return 200 "ok"; }
    }
}
CONF
# nginx's launcher, run through sh (the port is its $1): prints "listening on" once nginx answers.
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

# server_ticks: CPU ticks of the process serving: nginx itself under its launcher, else the started process.
server_ticks() {
    local serving
    serving=$(pgrep -P "$pid" -x nginx || echo "$pid")
    awk '{print $14 + $15}' "/proc/$serving/stat"
}

# small_round PORT SERVER...: one wrk run against /files/small.bin; prints "req/s server-CPU-us-per-request"
# (user + system time of the server over the run, over the requests wrk counted).
small_round() {
    local port=$1; shift
    start "$port" "$@"
    local url="http://127.0.0.1:$port/files/small.bin" before after out
    [ "$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "$url")" = "200 1024" ] || { echo "bad answer from $*" >&2; exit 1; }
    before=$(server_ticks)
    out=$(taskset -c "$CLIENT_CORE" wrk -t1 -c64 -d"$DURATION" "$url")
    after=$(server_ticks)
    cleanup
    awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
        /^Requests\/sec:/ { rps = $2 } / requests in / { requests = $1 }
        END { printf "%s %.1f\n", rps, (requests > 0 ? ticks / hz / requests * 1e6 : 0) }' <<< "$out"
}

# big_round PORT SERVER...: REPEAT fetches of /files/big.bin on one connection; prints "MB/s cpu-s-per-GiB".
big_round() {
    local port=$1; shift
    start "$port" "$@"
    local url="http://127.0.0.1:$port/files/big.bin"
    local urls=() before after out
    for _ in $(seq 1 "$REPEAT"); do urls+=(-o /dev/null "$url"); done  # curl's -o goes with one URL each
    before=$(server_ticks)
    out=$(taskset -c "$CLIENT_CORE" curl -s -w '%{http_code} %{size_download} %{time_total} %{num_connects}\n' "${urls[@]}")
    after=$(server_ticks)
    cleanup
    awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" -v want=$((100 * 1024 * 1024)) '
        $1 != 200 || $2 != want { print "bad transfer: " $0 > "/dev/stderr"; exit 1 }
        { bytes += $2; seconds += $3; connects += $4 }
        END {
            if (connects != 1) { print "expected one connection, curl made " connects > "/dev/stderr"; exit 1 }
            printf "%.0f %.3f\n", bytes / seconds / 1e6, (ticks / hz) / (bytes / 1073741824) }' <<< "$out"
}

echo "Static files, LoopDemo serve --root (release) vs nginx (one process, sendfile on), server on core $SERVER_CORE, clients on core $CLIENT_CORE"
lk=(); ngx=(); hb=(); prior=(); lk_us=(); ngx_us=(); hb_us=(); prior_us=()
for round in $(seq 1 "$ROUNDS"); do
    read -r rps us < <(small_round $((PORT_BASE + 1)) "$LOOPDEMO" serve --log-level warning --root "$root")
    lk+=("$rps"); lk_us+=("$us")
    read -r rps us < <(small_round $((PORT_BASE + 2)) sh "$nginx_dir/peer.sh")
    ngx+=("$rps"); ngx_us+=("$us")
    read -r rps us < <(small_round $((PORT_BASE + 6)) "$HB_PEER" --root "$root")
    hb+=("$rps"); hb_us+=("$us")
    if [ -n "${LOOPDEMO_BEFORE:-}" ]; then
        read -r rps us < <(small_round $((PORT_BASE + 5)) "$LOOPDEMO_BEFORE" serve --log-level warning --root "$root")
        prior+=("$rps"); prior_us+=("$us")
    fi
done
echo "A 1 KiB file, keep-alive, wrk -t1 -c64 ($ROUNDS alternated rounds of $DURATION; median req/s, median server CPU per request)"
printf '  LoopKitHTTP  %10.0f req/s   %5.1f us CPU/req   rounds: %s\n' "$(printf '%s\n' "${lk[@]}" | median)" "$(printf '%s\n' "${lk_us[@]}" | median)" "${lk[*]}"
printf '  nginx        %10.0f req/s   %5.1f us CPU/req   rounds: %s\n' "$(printf '%s\n' "${ngx[@]}" | median)" "$(printf '%s\n' "${ngx_us[@]}" | median)" "${ngx[*]}"
printf '  Hummingbird  %10.0f req/s   %5.1f us CPU/req   rounds: %s   (FileMiddleware)\n' "$(printf '%s\n' "${hb[@]}" | median)" \
    "$(printf '%s\n' "${hb_us[@]}" | median)" "${hb[*]}"
printf '  LoopKitHTTP / nginx, req/s: %s; CPU per request: %s\n' "$(ratio_summary lk ngx)" "$(ratio_summary lk_us ngx_us)"
printf '  LoopKitHTTP / Hummingbird, req/s: %s; CPU per request: %s\n' "$(ratio_summary lk hb)" "$(ratio_summary lk_us hb_us)"
if [ ${#prior[@]} -gt 0 ]; then
    printf '  before       %10.0f req/s   %5.1f us CPU/req   rounds: %s   (%s)\n' "$(printf '%s\n' "${prior[@]}" | median)" \
        "$(printf '%s\n' "${prior_us[@]}" | median)" "${prior[*]}" "$LOOPDEMO_BEFORE"
    printf '  LoopKitHTTP / before, req/s: %s; CPU per request: %s\n' "$(ratio_summary lk prior)" "$(ratio_summary lk_us prior_us)"
fi

lk_rate=(); lk_cpu=(); ngx_rate=(); ngx_cpu=()
for round in $(seq 1 "$BIG_ROUNDS"); do
    read -r rate cpu < <(big_round $((PORT_BASE + 3)) "$LOOPDEMO" serve --log-level warning --root "$root")
    [ -n "${cpu:-}" ] || { echo "a LoopKit round of the 100 MiB file failed" >&2; exit 1; }
    lk_rate+=("$rate"); lk_cpu+=("$cpu"); rate=""; cpu=""
    read -r rate cpu < <(big_round $((PORT_BASE + 4)) sh "$nginx_dir/peer.sh")
    [ -n "${cpu:-}" ] || { echo "an nginx round of the 100 MiB file failed" >&2; exit 1; }
    ngx_rate+=("$rate"); ngx_cpu+=("$cpu"); rate=""; cpu=""
done
echo "A 100 MiB file, $REPEAT fetches on one connection with curl ($BIG_ROUNDS alternated rounds; median MB/s, server CPU s per GiB)"
printf '  LoopKitHTTP  %6.0f MB/s   %6.3f CPU s/GiB   rounds: %s MB/s\n' "$(printf '%s\n' "${lk_rate[@]}" | median)" \
    "$(printf '%s\n' "${lk_cpu[@]}" | median)" "${lk_rate[*]}"
printf '  nginx        %6.0f MB/s   %6.3f CPU s/GiB   rounds: %s MB/s\n' "$(printf '%s\n' "${ngx_rate[@]}" | median)" \
    "$(printf '%s\n' "${ngx_cpu[@]}" | median)" "${ngx_rate[*]}"
printf '  LoopKitHTTP / nginx, MB/s: %s\n' "$(ratio_summary lk_rate ngx_rate)"
