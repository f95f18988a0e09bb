# Shared by http-bench.sh and https-bench.sh (sourced, not run): one pinned server at a time.
#   SERVER_CORE, CLIENT_CORE: the cores of the server and of the load generator (default 0 and 1).
SERVER_CORE=${SERVER_CORE:-0}
CLIENT_CORE=${CLIENT_CORE:-1}
pid=""

# cleanup: stops the running server (SIGTERM, then waits for it).
cleanup() {
    if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    pid=""
}
trap cleanup EXIT

# start PORT COMMAND...: starts a server pinned to SERVER_CORE and waits for its "listening on" line.
# A command run through "sh -c" gets the port as its $1; any other gets "--port PORT".
start() {
    local port=$1; shift
    local log; log=$(mktemp)
    if [ "$1" = "sh" ]; then
        taskset -c "$SERVER_CORE" "$@" "$port" > "$log" 2>/dev/null &
    else
        taskset -c "$SERVER_CORE" "$@" --port "$port" > "$log" 2>/dev/null &
    fi
    pid=$!
    for _ in $(seq 1 400); do grep -q "^listening on" "$log" && { rm -f "$log"; return 0; }; sleep 0.05; done
    echo "server did not start: $*" >&2; exit 1
}

# cpu_ticks: the server's user + system CPU time so far, in clock ticks (/proc/PID/stat fields 14 and 15).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

# rss_kib: the server's resident set size now, in KiB.
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }

# median of the numbers on stdin
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# ratio_summary VALUES-ARRAY-NAME PEER-ARRAY-NAME: "M (min-max)", the median of the per-round ratios.
ratio_summary() {
    local -n mine=$1 theirs=$2
    local ratios
    ratios=$(for i in "${!mine[@]}"; do awk -v a="${mine[$i]}" -v b="${theirs[$i]}" 'BEGIN {printf "%.3f\n", (b > 0 ? a / b : 0)}'; done)
    printf '%s (%s-%s)' "$(median <<< "$ratios")" "$(sort -g <<< "$ratios" | head -1)" "$(sort -g <<< "$ratios" | tail -1)"
}

# idle_rss_row LABEL COUNT CLIENT...: with a server started (pid), runs CLIENT pinned to CLIENT_CORE, which
# opens COUNT idle connections, prints "ready N" and holds them until its standard input closes; prints the
# server's RSS growth per connection, then stops the server.
idle_rss_row() {
    local name=$1 count=$2; shift 2
    sleep 0.3
    local before; before=$(rss_kib)
    coproc clients { taskset -c "$CLIENT_CORE" "$@"; }
    local said; read -r said <&"${clients[0]}"
    sleep 0.5
    local after; after=$(rss_kib)
    exec {clients[1]}>&-
    wait "$clients_PID" 2>/dev/null || true
    cleanup
    if [ "${said%% *}" != ready ]; then echo "  $name: clients $said"; return; fi
    awk -v name="$name" -v b="$before" -v a="$after" -v n="$count" 'BEGIN {
        printf "  %-38s %6.1f KiB per connection   (RSS %d -> %d KiB)\n", name, (a - b) / n, b, a }'
}
