/// The Python peers of the client's tests (stdlib only, plus `brotli` for one route): written to a temporary
/// file and run with `python3 FILE MODE [ARG]`; each prints its port on the first line.
///
/// Modes: `serve` (the routes below; `/chunked`, `/malformed` and `/untilclose` write their bytes as they are), `drop-reused` (as `serve`, but a connection's second request is read
/// and the connection closed unanswered: what a server closing an idle keep-alive connection looks like to a
/// client that reused it), `tls CERT KEY` (`serve` over TLS), `proxy` (a CONNECT proxy that maps the
/// name `service.invalid` to 127.0.0.1). `/echo` answers the request's body, its method (`X-Method`) and its
/// `Content-Length` (`X-Content-Length`, `none`); `/see-other` redirects to `/echo` with a 303; `/close`
/// answers with `Connection: close` and closes the connection.
let peerServerScript = #"""
import gzip, select, socket, ssl, sys, threading, time

mode = sys.argv[1]
lock = threading.Lock()
stats = {"connections": 0, "stalled": False, "slow": 0}
bomb = gzip.compress(b"\0" * (32 * 1024 * 1024))

def read_request(f):
    line = f.readline()
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) < 2:
        return None
    headers = {}
    while True:
        h = f.readline()
        if not h or h in (b"\r\n", b"\n"):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = b""
    if "content-length" in headers:
        body = f.read(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int(f.readline().split(b";")[0], 16)
            if size == 0:
                f.readline()
                break
            body += f.read(size)
            f.readline()
    return parts[0], parts[1], headers, body

def respond(conn, status, body, headers=(), head_only=False):
    head = "HTTP/1.1 %s\r\nContent-Length: %d\r\n" % (status, len(body))
    for name, value in headers:
        head += "%s: %s\r\n" % (name, value)
    # A response to HEAD has no body (RFC 9110 9.3.2): bytes after it would be a broken connection to curl.
    conn.sendall(head.encode() + b"\r\n" + (b"" if head_only else body))

def send_watching(conn, data):
    view = memoryview(data)
    while view:
        _, writable, _ = select.select([], [conn], [], 1.0)
        if not writable:
            with lock:
                stats["stalled"] = True
            continue
        sent = conn.send(view)
        view = view[sent:]

def handle(conn, number):
    f = conn.makefile("rb")
    served = 0
    try:
        while True:
            request = read_request(f)
            if request is None:
                return
            method, path, headers, body = request
            if mode == "drop-reused" and served >= 1:
                return
            served += 1
            route, _, query = path.partition("?")
            if route == "/hello":
                respond(conn, "200 OK", b"hello from connection %d" % number, [("Content-Type", "text/plain")],
                        head_only=method == "HEAD")
            elif route == "/slow":
                with lock:
                    stats["slow"] += 1
                time.sleep(float(query or "5"))
                respond(conn, "200 OK", b"slow")
            elif route.startswith("/redirect/"):
                left = int(route[len("/redirect/"):])
                if left == 0:
                    respond(conn, "200 OK", b"arrived")
                else:
                    respond(conn, "302 Found", b"", [("Location", "/redirect/%d" % (left - 1))])
            elif route == "/cross":
                respond(conn, "302 Found", b"", [("Location", query + "/auth")])
            elif route == "/auth":
                respond(conn, "200 OK", headers.get("authorization", "none").encode())
            elif route == "/gzip":
                respond(conn, "200 OK", gzip.compress(b"compressed hello " * 1000), [("Content-Encoding", "gzip")])
            elif route == "/br":
                import brotli
                respond(conn, "200 OK", brotli.compress(b"brotli hello " * 1000), [("Content-Encoding", "br")])
            elif route == "/bomb":
                respond(conn, "200 OK", bomb, [("Content-Encoding", "gzip")])
            elif route == "/big":
                total = int(query)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
                chunk = b"x" * 65536
                while total > 0:
                    send_watching(conn, chunk[:total])
                    total -= min(total, len(chunk))
            elif route == "/stalled":
                with lock:
                    respond(conn, "200 OK", b"yes" if stats["stalled"] else b"no")
            elif route == "/slowcount":
                with lock:
                    respond(conn, "200 OK", str(stats["slow"]).encode())
            elif route == "/connections":
                with lock:
                    respond(conn, "200 OK", str(stats["connections"]).encode())
            elif route == "/head":
                conn.sendall("HTTP/1.1 299 Custom Reason\r\nContent-Length: 2\r\nx-lower: v\r\nX-Spaced:   padded value  \r\n"
                             "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Utf8: caf\u00e9\r\nbad name: dropped\r\n\r\nok".encode())
            elif route == "/chunked":
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n"
                             b"1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n")
            elif route == "/malformed":
                conn.sendall(b"HTPT/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            elif route == "/untilclose":
                conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nread to the end")
                return
            elif route == "/echo":
                respond(conn, "200 OK", body, [("X-Method", method),
                                               ("X-Content-Length", headers.get("content-length", "none"))])
            elif route == "/see-other":
                respond(conn, "303 See Other", b"", [("Location", "/echo")])
            elif route == "/close":
                respond(conn, "200 OK", b"closing", [("Connection", "close")])
                return
            else:
                respond(conn, "404 Not Found", b"")
    except (OSError, ValueError):
        pass
    finally:
        conn.close()

def tunnel(client):
    f = client.makefile("rb")
    line = f.readline().decode("latin-1").split()
    while f.readline() not in (b"\r\n", b"\n", b""):
        pass
    host, _, port = line[1].rpartition(":")
    if host == "service.invalid":
        host = "127.0.0.1"
    upstream = socket.create_connection((host, int(port)))
    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    def pump(source, target):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        finally:
            try:
                target.shutdown(socket.SHUT_WR)
            except OSError:
                pass
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
    pump(client, upstream)

server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(128)
context = None
if mode == "tls":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
print(server.getsockname()[1], flush=True)
while True:
    conn, _ = server.accept()
    with lock:
        stats["connections"] += 1
        number = stats["connections"]
    if mode == "proxy":
        threading.Thread(target=tunnel, args=(conn,), daemon=True).start()
        continue
    if context is not None:
        try:
            conn = context.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            conn.close()
            continue
    threading.Thread(target=handle, args=(conn, number), daemon=True).start()
"""#
