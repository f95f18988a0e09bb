#!/bin/sh
# h2o (Debian's 2.2) as a peer of h2-bench.sh: one thread (`num-threads: 1`), no access log, GET /hello answered
# with "Hello, World!" (13 bytes, text/plain) from a file kept open by h2o's file cache (h2o has no fixed-response
# directive; its mruby handler was slower here, see RESULTS-h2.txt). Plain listener: h2c by prior knowledge (and
# HTTP/1.1); with TLS_CERT and TLS_KEY (PEM files) in the environment, TLS with ALPN h2. Run as `h2o-h2-peer.sh PORT`;
# prints "listening on" once it answers, stops on SIGTERM.
set -eu
port=$1
dir=$(mktemp -d)
mkdir -p "$dir/www"
printf 'Hello, World!' > "$dir/www/hello"
if [ -n "${TLS_CERT:-}" ]; then
    ssl="      ssl:
        certificate-file: $TLS_CERT
        key-file: $TLS_KEY"
    scheme=https
else
    ssl=""
    scheme=http
fi
cat > "$dir/h2o.conf" <<CONF
num-threads: 1
user: $(id -un)
pid-file: $dir/h2o.pid
error-log: $dir/error.log
http2-idle-timeout: 120
http1-request-timeout: 120
file.mime.addtypes:
  text/plain: .txt
hosts:
  default:
    listen:
      host: 127.0.0.1
      port: $port
$ssl
    paths:
      /hello:
        file.file: $dir/www/hello
        header.set: "content-type: text/plain"
CONF
h2o -c "$dir/h2o.conf" > /dev/null 2>&1 &
server=$!
stop() { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$dir"; exit 0; }
trap stop TERM INT
for _ in $(seq 1 200); do
    if [ "$scheme" = http ]; then
        curl -s --http2-prior-knowledge "http://127.0.0.1:$port/hello" > /dev/null && { echo "listening on 127.0.0.1:$port"; break; }
    else
        curl -s -k --http2 "https://127.0.0.1:$port/hello" > /dev/null && { echo "listening on 127.0.0.1:$port"; break; }
    fi
    sleep 0.05
done
wait "$server"
