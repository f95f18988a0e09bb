#!/bin/sh
# nginx as the h2c anchor of h2-bench.sh: nginx-peer.sh's one process with `http2` on its plain listener (h2c by
# prior knowledge); with TLS_CERT and TLS_KEY (PEM files) in the environment, `ssl http2` instead (ALPN h2). Run as
# `nginx-h2-peer.sh PORT`; prints "listening on" once it answers, stops on SIGTERM.
set -eu
port=$1
dir=$(mktemp -d)
if [ -n "${TLS_CERT:-}" ]; then
    listen="listen 127.0.0.1:$port ssl http2; ssl_certificate $TLS_CERT; ssl_certificate_key $TLS_KEY; ssl_protocols TLSv1.2 TLSv1.3;"
    check="curl -s -k --http2 https://127.0.0.1:$port/hello"
else
    listen="listen 127.0.0.1:$port http2;"
    check="curl -s --http2-prior-knowledge http://127.0.0.1:$port/hello"
fi
cat > "$dir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log error;
events { worker_connections 20000; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    http2_max_requests 100000000;
    client_body_temp_path $dir;
    server {
        $listen
        location = /hello { default_type text/plain; return 200 "Hello, World!"; }
    }
}
CONF
nginx -p "$dir" -c "$dir/nginx.conf" 2>/dev/null &
server=$!
stop() { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$dir"; exit 0; }
trap stop TERM INT
for _ in $(seq 1 200); do
    $check > /dev/null && { echo "listening on 127.0.0.1:$port"; break; }
    sleep 0.05
done
wait "$server"
