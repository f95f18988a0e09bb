#!/usr/bin/env python3
"""The soak's load generator and sampler (run by soak.sh; Python's stdlib and `websockets`).

Drives two `LoopDemo serve` processes (one HTTPS with metrics on, one plain HTTP) on 127.0.0.1 with a paced,
bounded mix of traffic for a set time, samples each server's RSS, open descriptors and the `/hello` p99 every
SAMPLE seconds into a CSV, draws an SVG of the curves, and judges the run:

  * no 5xx that was not asked for (every response a client reads is checked; the garbage clients' 505 for an
    unsupported version and 501 for an unknown method or coding are asked for), and no more counted by the
    HTTPS server's metrics than its clients asked for;
  * RSS at the end of the load within 5 % of RSS after warm-up (the mean of three samples each);
  * open descriptors back to their base (before the first client) once the clients have left.

The load is a soak, not a throughput test: every client kind is a fixed number of tasks that pause between
steps, so the server stays far from saturation and the generator well under one core.
"""

import argparse
import asyncio
import csv
import hashlib
import json
import os
import random
import ssl
import sys
import time

import websockets

# ---------------------------------------------------------------------------------------------------------------
# State shared by the clients and the sampler.


class Stats:
    def __init__(self):
        self.responses = 0            # complete responses read by the clients
        self.by_kind = {}             # kind -> responses
        self.unasked_5xx = []         # (kind, status, detail), at most 50 kept
        self.unasked_5xx_count = 0
        self.asked_5xx = {}           # target -> 5xx responses that were asked for (garbage)
        self.failures = {}            # kind -> count of unexpected client-side outcomes (not a verdict by itself)
        self.failure_examples = []
        self.hello_latencies = []     # this window's /hello latencies (s), the probe's
        self.ws_messages = 0
        self.sse_events = 0
        self.stalls_cut = 0           # stalled requests the server ended (408 or close)
        self.never_read_clients = 0   # never-reading clients that held on until cut or for 45 s
        self.never_read_cut = 0       # ...of which the server cut (its write timeout)

    def count(self, kind, status, asked=False, target=None):
        self.responses += 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        if status >= 500 and asked:
            self.asked_5xx[target] = self.asked_5xx.get(target, 0) + 1
        elif status >= 500:
            self.unasked_5xx_count += 1
            if len(self.unasked_5xx) < 50:
                self.unasked_5xx.append((kind, status))

    def fail(self, kind, detail):
        self.failures[kind] = self.failures.get(kind, 0) + 1
        if len(self.failure_examples) < 40:
            self.failure_examples.append(f"{time.strftime('%H:%M:%S')} {kind}: {detail}")


stats = Stats()
stopping = asyncio.Event()
open_clients = 0   # client connections open now (the generator's own count)


class Conn:
    """One client connection (asyncio streams), counted while open."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, target, tls_ok=True):
        global open_clients
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", target.port, ssl=target.ssl,
                                    server_hostname="localhost" if target.ssl else None), 10)
        open_clients += 1
        conn = cls(reader, writer)
        conn.closed = False
        return conn

    def abort(self):
        self.close(abort=True)

    def close(self, abort=False):
        global open_clients
        if self.closed:
            return
        self.closed = True
        open_clients -= 1
        try:
            if abort:
                self.writer.transport.abort()
            else:
                self.writer.close()
        except Exception:
            pass

    async def send(self, data):
        self.writer.write(data)
        await self.writer.drain()


class Target:
    def __init__(self, name, port, ssl_context):
        self.name, self.port, self.ssl = name, port, ssl_context


# ---------------------------------------------------------------------------------------------------------------
# A small HTTP/1.1 client over asyncio streams.


async def read_response(reader, head_only=False):
    """Reads one response; returns (status, headers dict lower-cased, body bytes, server_closes)."""
    line = await reader.readline()
    if not line:
        raise ConnectionError("closed before a response")
    parts = line.decode("latin-1").split(" ", 2)
    status = int(parts[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    closes = headers.get("connection", "").lower() == "close"
    if head_only:
        return status, headers, b"", closes
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        return status, headers, bytes(body), closes
    if "content-length" in headers:
        return status, headers, await reader.readexactly(int(headers["content-length"])), closes
    if status in (204, 304) or 100 <= status < 200:
        return status, headers, b"", closes
    return status, headers, await reader.read(), True


def request_bytes(method, path, headers=(), body=None):
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost"]
    lines += [f"{k}: {v}" for k, v in headers]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


async def pause(low, high):
    """Sleeps a random time, or less when the soak is stopping."""
    try:
        await asyncio.wait_for(stopping.wait(), random.uniform(low, high))
    except asyncio.TimeoutError:
        pass


# ---------------------------------------------------------------------------------------------------------------
# The client kinds. Each loops until the soak stops; every step is paced.

HELLO = b"Hello, World!"


async def keep_alive_client(target):
    """Keep-alive: a connection, 5-40 paced requests (/hello, /stream, /work, /echo, 404s), then closed."""
    while not stopping.is_set():
        try:
            conn = await Conn.open(target)
            try:
                for _ in range(random.randint(5, 40)):
                    if stopping.is_set():
                        break
                    pick = random.random()
                    if pick < 0.5:
                        await conn.send(request_bytes("GET", "/hello"))
                        status, _, body, _ = await asyncio.wait_for(read_response(conn.reader), 15)
                        if status != 200 or body != HELLO:
                            stats.fail("keep-alive", f"/hello {status} {body[:40]!r}")
                    elif pick < 0.7:
                        size = random.choice([0, 1, 1000, 16384, 100_000, 400_000])
                        await conn.send(request_bytes("GET", f"/stream?bytes={size}"))
                        status, _, body, _ = await asyncio.wait_for(read_response(conn.reader), 15)
                        if status != 200 or len(body) != size:
                            stats.fail("keep-alive", f"/stream {status} {len(body)} of {size}")
                    elif pick < 0.8:
                        items = random.choice([0, 100, 5000])
                        await conn.send(request_bytes("GET", f"/work?items={items}"))
                        status, _, body, _ = await asyncio.wait_for(read_response(conn.reader), 15)
                        if status != 200:
                            stats.fail("keep-alive", f"/work {status}")
                    elif pick < 0.92:
                        payload = os.urandom(random.choice([0, 10, 3000, 70_000]))
                        await conn.send(request_bytes("POST", "/echo", [("Content-Type", "application/octet-stream")], payload))
                        status, _, body, _ = await asyncio.wait_for(read_response(conn.reader), 15)
                        if status != 200 or body != payload:
                            stats.fail("keep-alive", f"/echo {status} {len(body)} of {len(payload)}")
                    else:
                        await conn.send(request_bytes("GET", f"/nothing/{random.randint(0, 999)}"))
                        status, _, _, _ = await asyncio.wait_for(read_response(conn.reader), 15)
                        if status != 404:
                            stats.fail("keep-alive", f"404 route gave {status}")
                    stats.count("keep-alive", status)
                    await pause(0.02, 0.2)
            finally:
                conn.close()
        except Exception as error:
            stats.fail("keep-alive", repr(error))
        await pause(0.1, 0.5)


async def close_client(target):
    """`Connection: close`: one request a connection, the server closes after its response."""
    while not stopping.is_set():
        try:
            conn = await Conn.open(target)
            try:
                path = random.choice(["/hello", "/hello", "/stream?bytes=5000", "/favicon.ico", "/"])
                await conn.send(request_bytes("GET", path, [("Connection", "close")]))
                status, _, body, closes = await asyncio.wait_for(read_response(conn.reader), 15)
                rest = await asyncio.wait_for(conn.reader.read(), 15)  # the server ends the connection
                if status not in (200, 204) or not closes or rest:
                    stats.fail("close", f"{path} {status} close={closes} trailing={len(rest)}")
                stats.count("close", status)
            finally:
                conn.close()
        except Exception as error:
            stats.fail("close", repr(error))
        await pause(0.2, 0.6)


async def upload_client(target):
    """Streamed uploads: chunked /upload in paced pieces (hash checked) and a chunked /echo read as it streams."""
    while not stopping.is_set():
        try:
            conn = await Conn.open(target)
            try:
                for _ in range(random.randint(1, 4)):
                    if stopping.is_set():
                        break
                    route = random.choice(["/upload", "/echo"])
                    await conn.send(("POST %s HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
                                     "Content-Type: application/octet-stream\r\n\r\n" % route).encode())
                    digest, total, echoed = hashlib.sha256(), 0, bytearray()
                    reader_task = None
                    if route == "/echo":  # the echo streams back while the upload goes on: read it as it comes
                        reader_task = asyncio.ensure_future(read_response(conn.reader))
                    for _ in range(random.randint(1, 24)):
                        piece = os.urandom(random.choice([1, 512, 8192, 65536]))
                        digest.update(piece)
                        total += len(piece)
                        await conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
                        echoed += piece
                        await pause(0.005, 0.05)
                    await conn.send(b"0\r\n\r\n")
                    if reader_task:
                        status, _, body, _ = await asyncio.wait_for(reader_task, 30)
                        ok = status == 200 and body == bytes(echoed)
                    else:
                        status, _, body, _ = await asyncio.wait_for(read_response(conn.reader), 30)
                        ok = status == 200 and body.decode() == f"received {total} sha256 {digest.hexdigest()}\n"
                    if not ok:
                        stats.fail("upload", f"{route} {status} {body[:60]!r}")
                    stats.count("upload", status)
                    await pause(0.1, 0.5)
            finally:
                conn.close()
        except Exception as error:
            stats.fail("upload", repr(error))
        await pause(0.5, 1.5)


async def websocket_client(target, ws_ssl):
    """WebSocket echo with permessage-deflate: 5-60 messages, text and binary, then a close handshake or an
    abrupt drop (one in four)."""
    global open_clients
    scheme = "wss" if target.ssl else "ws"
    while not stopping.is_set():
        try:
            async with websockets.connect(f"{scheme}://localhost:{target.port}/ws/echo", ssl=ws_ssl if target.ssl else None,
                                          compression="deflate", max_size=4 * 1024 * 1024, open_timeout=10,
                                          close_timeout=5, ping_interval=None) as socket:
                open_clients += 1
                try:
                    if "permessage-deflate" not in (socket.response.headers.get("Sec-WebSocket-Extensions") or ""):
                        stats.fail("websocket", "no permessage-deflate negotiated")
                    for _ in range(random.randint(5, 60)):
                        if stopping.is_set():
                            break
                        if random.random() < 0.5:
                            message = "".join(random.choice("abcdé€ ") for _ in range(random.choice([0, 5, 200, 5000])))
                        else:
                            message = random.choice([b"", os.urandom(100), bytes(50_000), os.urandom(20_000)])
                        await socket.send(message)
                        echo = await asyncio.wait_for(socket.recv(), 15)
                        if echo != message:
                            stats.fail("websocket", f"echo differs ({type(message).__name__}, {len(message)})")
                        stats.ws_messages += 1
                        await pause(0.02, 0.2)
                    if random.random() < 0.25:
                        socket.transport.abort()  # gone without a close frame
                finally:
                    open_clients -= 1
            stats.count("websocket", 101)
        except websockets.exceptions.ConnectionClosedError as error:
            if not (error.rcvd is None and error.sent is None):  # not our own abort
                stats.fail("websocket", repr(error))
            else:
                stats.count("websocket", 101)
        except Exception as error:
            stats.fail("websocket", repr(error))
        await pause(0.5, 2)


async def sse_client(target):
    """Server-sent events: starts a job (POST /jobs), subscribes to its events; leaves after a few events (half
    the time) or reads to the final event; sometimes resumes with Last-Event-ID."""
    while not stopping.is_set():
        try:
            conn = await Conn.open(target)
            try:
                items = random.choice([50_000, 100_000, 200_000])
                await conn.send(request_bytes("POST", f"/jobs?items={items}", body=b""))
                status, _, body, _ = await asyncio.wait_for(read_response(conn.reader), 15)
                stats.count("sse", status)
                if status != 201:
                    stats.fail("sse", f"POST /jobs {status} {body[:60]!r}")
                    continue
                job = json.loads(body)["id"]
                leave_after = random.choice([1, 3, 10, None])
                await conn.send(request_bytes("GET", f"/jobs/{job}/events", [("Accept", "text/event-stream")]))
                status, headers, _, _ = await asyncio.wait_for(read_response(conn.reader, head_only=True), 15)
                stats.count("sse", status)
                if status != 200:
                    if status != 204:
                        stats.fail("sse", f"events {status}")
                    continue
                events, last_id = 0, None
                while True:  # chunked framing around the event stream: read lines, count the blank ones
                    line = await asyncio.wait_for(conn.reader.readline(), 20)
                    if not line:
                        break
                    text = line.decode("utf-8", "replace").rstrip("\r\n")
                    if text.startswith("id:"):
                        last_id = text[3:].strip()
                    if text.startswith("data:"):
                        events += 1
                        stats.sse_events += 1
                    if text == "0":  # the last chunk: the job ended and the stream with it
                        break
                    if leave_after is not None and events >= leave_after:
                        break
                    if stopping.is_set():
                        break
                if leave_after is not None and last_id and random.random() < 0.5 and not stopping.is_set():
                    conn.abort()  # gone mid-stream; then a reconnect that resumes
                    conn = await Conn.open(target)
                    await conn.send(request_bytes("GET", f"/jobs/{job}/events", [("Last-Event-ID", last_id), ("Connection", "close")]))
                    status, _, _, _ = await asyncio.wait_for(read_response(conn.reader, head_only=True), 15)
                    stats.count("sse", status)
                    if status not in (200, 204):
                        stats.fail("sse", f"resume {status}")
                    await pause(0.2, 1)
            finally:
                conn.abort()  # a subscriber that goes without a goodbye
        except Exception as error:
            stats.fail("sse", repr(error))
        await pause(1, 4)


async def never_read_client(target):
    """Asks for a big stream (or sends WebSocket-free requests pipelined) and never reads: the server must stop
    at its high-water mark and cut the connection after its write timeout (30 s); the client waits up to 45 s."""
    while not stopping.is_set():
        try:
            conn = await Conn.open(target)
            try:
                # Small receive buffer so the server's output backs up quickly.
                import socket as socketmodule
                sock = conn.writer.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socketmodule.SOL_SOCKET, socketmodule.SO_RCVBUF, 4096)
                if random.random() < 0.5:
                    await conn.send(request_bytes("GET", "/stream?bytes=67108864"))
                else:
                    await conn.send(request_bytes("GET", "/stream?bytes=2000000") * 20)  # pipelined, never read
                conn.writer.transport.pause_reading()
                deadline = time.monotonic() + 45
                while time.monotonic() < deadline and not stopping.is_set():
                    await pause(1, 1)
                    # The server's cut (a reset after its write timeout, 30 s) shows as the socket's error.
                    if sock is not None and sock.getsockopt(socketmodule.SOL_SOCKET, socketmodule.SO_ERROR) != 0:
                        stats.never_read_cut += 1
                        break
                stats.never_read_clients += 1
            finally:
                conn.abort()
        except Exception as error:
            stats.fail("never-read", repr(error))
        await pause(1, 5)


async def stall_client(target):
    """Stalls mid-request: half a head, or a head and part of its body, then nothing: the server answers 408 and
    closes (head timeout 10 s, body timeout 30 s); the client gives up after 45 s."""
    while not stopping.is_set():
        try:
            conn = await Conn.open(target)
            try:
                if random.random() < 0.5:
                    await conn.send(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
                else:
                    await conn.send(b"POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n" + bytes(1000))
                try:
                    status, _, _, _ = await asyncio.wait_for(read_response(conn.reader), 45)
                    stats.count("stall", status)
                    if status != 408:
                        stats.fail("stall", f"stalled request answered {status}")
                    stats.stalls_cut += 1
                except ConnectionError:
                    stats.stalls_cut += 1  # closed without a response: acceptable for a stall
                except asyncio.TimeoutError:
                    if not stopping.is_set():
                        stats.fail("stall", "the server did not end a stalled request in 45 s")
            finally:
                conn.abort()
        except Exception as error:
            stats.fail("stall", repr(error))
        await pause(1, 4)


# Malformed requests, each with the 5xx it asks for (an unsupported version 505, an unknown method or transfer
# coding 501); any other 5xx is a failure.
GARBAGE = [
    (b"\x00\x01\x02\x03\r\n\r\n", ()),
    (b"GET / HTTP/9.9\r\nHost: x\r\n\r\n", (505,)),
    (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", (505,)),
    (b"GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", ()),
    (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", ()),
    (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", (501,)),
    (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", ()),
    (b"GET /hello HTTP/1.1\r\nHost: x\r\n" + b"X-Long: " + b"a" * 100_000 + b"\r\n\r\n", ()),
    (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", ()),
    (b"GET /hello HTTP/1.1\r\nHost: a b\r\n\r\n", ()),
    (b"GET /hello HTTP/1.1\r\nHost: a%zz\r\n\r\n", ()),
    (b"GET /hello HTTP/1.1\r\nHo st: x\r\n\r\n", ()),
    (b"GET /hello HTTP/1.1\r\n\r\n", ()),
    (b"GET /ws/echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n", ()),
    (b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n", (501,)),
    (b"GET /hello?%zz=%%%% HTTP/1.1\r\nHost: x\r\n\r\n", ()),
    (b"GET /stream?bytes=-5 HTTP/1.1\r\nHost: x\r\n\r\n", ()),
    (b"GET /hello HTTP/1.1\r\nHost: x\r\nExpect: 100-banana\r\n\r\n", ()),
    (b"\r\n\r\n\r\n", ()),
]


async def garbage_client(target):
    """Garbage: malformed requests from a fixed list and random bytes; to the HTTPS server also raw bytes where
    a ClientHello should be. Whatever the server answers must not be a 5xx it was not asked for (see GARBAGE)."""
    while not stopping.is_set():
        try:
            if target.ssl is not None and random.random() < 0.3:
                # Not TLS at all, or a truncated handshake, straight onto the TLS port.
                reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", target.port), 10)
                global open_clients
                open_clients += 1
                try:
                    writer.write(random.choice([os.urandom(random.randint(1, 2000)), b"GET / HTTP/1.1\r\n\r\n",
                                                b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(40)]))
                    await writer.drain()
                    await asyncio.wait_for(reader.read(), 20)
                except (asyncio.TimeoutError, ConnectionError):
                    pass
                finally:
                    open_clients -= 1
                    writer.transport.abort()
                stats.count("garbage", 0)
            else:
                conn = await Conn.open(target)
                try:
                    data, asked = random.choice(GARBAGE) if random.random() < 0.8 else (os.urandom(random.randint(1, 3000)), ())
                    await conn.send(data)
                    try:
                        status, _, _, _ = await asyncio.wait_for(read_response(conn.reader), 20)
                        stats.count("garbage", status, asked=status in asked, target=target.name)
                    except (ConnectionError, ValueError, IndexError, asyncio.IncompleteReadError):
                        stats.count("garbage", 0)  # closed without a parsable response
                    except asyncio.TimeoutError:
                        stats.count("garbage", 0)  # a head the server still waits on (e.g. random bytes)
                finally:
                    conn.abort()
        except (ConnectionError, asyncio.TimeoutError):
            pass
        except Exception as error:
            stats.fail("garbage", repr(error))
        await pause(0.3, 1.5)


async def hello_probe(target):
    """The /hello latency probe: one keep-alive connection, a GET /hello every 50 ms, each timed."""
    while not stopping.is_set():
        try:
            conn = await Conn.open(target)
            try:
                for _ in range(1000):
                    if stopping.is_set():
                        break
                    start = time.perf_counter()
                    await conn.send(request_bytes("GET", "/hello"))
                    status, _, body, _ = await asyncio.wait_for(read_response(conn.reader), 15)
                    stats.hello_latencies.append(time.perf_counter() - start)
                    stats.count("probe", status)
                    if status != 200 or body != HELLO:
                        stats.fail("probe", f"/hello {status}")
                    await pause(0.05, 0.05)
            finally:
                conn.close()
        except Exception as error:
            stats.fail("probe", repr(error))
            await pause(0.5, 0.5)


# ---------------------------------------------------------------------------------------------------------------
# Sampling.


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def p99(values):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def scrape_metrics(port):
    """(requests answered, 5xx answered, open connections) from the HTTPS server's /metrics."""
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    requests = errors = opened = 0
    for line in text.splitlines():
        if line.startswith("http_server_requests") and not line.startswith("http_server_requests_"):
            value = float(line.rsplit(" ", 1)[1])
            requests += value
            if '"5xx"' in line or 'status="5' in line or '="5xx"' in line:
                errors += value
        elif line.startswith("http_server_requests_total"):
            value = float(line.rsplit(" ", 1)[1])
            requests += value
            if '"5xx"' in line or '="5' in line:
                errors += value
        elif line.startswith("http_server_open_connections"):
            opened = float(line.rsplit(" ", 1)[1])
    return int(requests), int(errors), int(opened)


# ---------------------------------------------------------------------------------------------------------------
# The SVG plot, drawn by hand: three panels over time (RSS, descriptors, /hello p99), one line per server.


def svg_plot(rows, path, title, warmup_end, load_end):
    width, panel_height, left, right, top = 760, 150, 70, 20, 40
    panels = [("RSS (MiB)", "rss_kib", 1 / 1024), ("open descriptors", "fds", 1), ("/hello p99 (ms), HTTPS probe", "hello_p99_ms", 1)]
    servers = sorted({row["server"] for row in rows})
    colours = {"https": "#1f77b4", "http": "#d62728"}
    t_max = max(float(row["t_s"]) for row in rows) or 1
    height = top + len(panels) * (panel_height + 45) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{title}</text>']
    for index, (label, key, scale) in enumerate(panels):
        y0 = top + index * (panel_height + 45)
        series = {s: [(float(r["t_s"]), float(r[key]) * scale) for r in rows if r["server"] == s and r[key] != ""] for s in servers}
        if key == "hello_p99_ms":
            series = {"https": series.get("https", [])}
        values = [v for points in series.values() for _, v in points] or [0]
        v_max = max(values) * 1.1 or 1
        v_min = 0
        plot_w = width - left - right
        def x(t):
            return left + plot_w * t / t_max
        def y(v):
            return y0 + panel_height - panel_height * (v - v_min) / (v_max - v_min)
        out.append(f'<text x="{left}" y="{y0 - 6}" font-size="12">{label}</text>')
        out.append(f'<rect x="{left}" y="{y0}" width="{plot_w}" height="{panel_height}" fill="none" stroke="#999"/>')
        for fraction in (0, 0.5, 1):
            v = v_min + (v_max - v_min) * fraction
            out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
        for t, name in ((warmup_end, "warm-up end"), (load_end, "clients leave")):
            out.append(f'<line x1="{x(t):.1f}" y1="{y0}" x2="{x(t):.1f}" y2="{y0 + panel_height}" stroke="#aaa" stroke-dasharray="4,3"/>')
            if index == 0:
                out.append(f'<text x="{x(t) + 3:.1f}" y="{y0 + 12}" fill="#777">{name}</text>')
        for t in range(0, int(t_max) + 1, max(60, int(t_max / 10) // 60 * 60 or 60)):
            out.append(f'<text x="{x(t):.1f}" y="{y0 + panel_height + 14}" text-anchor="middle">{t // 60} min</text>')
        for legend, (server, points) in enumerate(series.items()):
            if not points:
                continue
            line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
            out.append(f'<polyline points="{line}" fill="none" stroke="{colours.get(server, "#000")}" stroke-width="1.5"/>')
            out.append(f'<text x="{width - right - 110 + legend * 55}" y="{y0 - 6}" fill="{colours.get(server, "#000")}">{server}</text>')
    out.append("</svg>")
    with open(path, "w") as handle:
        handle.write("\n".join(out) + "\n")


# ---------------------------------------------------------------------------------------------------------------


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--https-port", type=int, required=True)
    parser.add_argument("--https-pid", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--http-pid", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=None, help="seconds (default: 20 % of the run, 60-300 s)")
    parser.add_argument("--sample", type=float, default=10)
    parser.add_argument("--csv", required=True)
    parser.add_argument("--svg", required=True)
    parser.add_argument("--summary", required=True)
    args = parser.parse_args()
    random.seed(33)

    context = ssl.create_default_context(cafile=args.ca)
    https = Target("https", args.https_port, context)
    http = Target("http", args.http_port, None)
    pids = {"https": args.https_pid, "http": args.http_pid}
    duration = args.minutes * 60
    warmup = args.warmup if args.warmup is not None else min(300, max(60, duration * 0.2))

    base_fds = {name: fd_count(pid) for name, pid in pids.items()}
    start_rss = {name: rss_kib(pid) for name, pid in pids.items()}
    start_cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
    generator_cpu_start = time.process_time()

    # Bounded: a fixed number of tasks of each kind, about 40 connections at most at once.
    tasks = [asyncio.ensure_future(hello_probe(https))]
    for target in (https, http):
        tasks += [asyncio.ensure_future(keep_alive_client(target)) for _ in range(3)]
        tasks += [asyncio.ensure_future(close_client(target)) for _ in range(2)]
        tasks += [asyncio.ensure_future(upload_client(target)) for _ in range(1)]
        tasks += [asyncio.ensure_future(websocket_client(target, context)) for _ in range(2)]
        tasks += [asyncio.ensure_future(sse_client(target)) for _ in range(2)]
        tasks += [asyncio.ensure_future(never_read_client(target)) for _ in range(1)]
        tasks += [asyncio.ensure_future(stall_client(target)) for _ in range(2)]
        tasks += [asyncio.ensure_future(garbage_client(target)) for _ in range(1)]

    rows = []
    started = time.monotonic()
    fields = ["t_s", "phase", "server", "rss_kib", "fds", "cpu_s", "hello_p99_ms", "hello_count", "responses",
              "client_conns", "server_requests", "server_5xx", "load1"]

    def sample(phase):
        now = time.monotonic() - started
        latencies, stats.hello_latencies = stats.hello_latencies, []
        try:
            served, errors, _ = scrape_metrics(args.metrics_port)
        except Exception:
            served, errors = "", ""
        load1 = os.getloadavg()[0]
        for name, pid in pids.items():
            rows.append({"t_s": f"{now:.0f}", "phase": phase, "server": name, "rss_kib": rss_kib(pid), "fds": fd_count(pid),
                         "cpu_s": f"{cpu_seconds(pid) - start_cpu[name]:.1f}",
                         "hello_p99_ms": f"{p99(latencies) * 1000:.2f}" if name == "https" and latencies else "",
                         "hello_count": len(latencies) if name == "https" else "",
                         "responses": stats.responses, "client_conns": open_clients,
                         "server_requests": served if name == "https" else "", "server_5xx": errors if name == "https" else "",
                         "load1": f"{load1:.2f}"})
        last = rows[-2:]
        print(f"[{now / 60:5.1f} min] {phase:8s} " + "  ".join(
            f"{r['server']}: rss {int(r['rss_kib']) / 1024:.1f} MiB fds {r['fds']}" for r in last)
            + f"  p99 {last[0]['hello_p99_ms'] or '-'} ms  responses {stats.responses}  conns {open_clients}  load {load1:.2f}",
            flush=True)

    sample("base")
    while time.monotonic() - started < duration:
        await asyncio.sleep(args.sample - ((time.monotonic() - started) % args.sample))
        sample("warm-up" if time.monotonic() - started <= warmup + 1 else "load")
    load_end = time.monotonic() - started

    # The clients leave: every task stops at its next step, its connections closed.
    stopping.set()
    await asyncio.wait(tasks, timeout=60)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    generator_cpu = time.process_time() - generator_cpu_start

    # Descriptors back to base: the server closes its ends at once (or within its timeouts).
    settled = {}
    deadline = time.monotonic() + 70
    while time.monotonic() < deadline:
        if all(fd_count(pid) <= base_fds[name] for name, pid in pids.items()):
            break
        await asyncio.sleep(1)
    sample("after")
    for name, pid in pids.items():
        settled[name] = fd_count(pid)

    with open(args.csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    svg_plot(rows, args.svg, f"LoopDemo serve soak: {args.minutes:g} min, mixed traffic (Benchmarks/soak.sh)", warmup, load_end)

    # The verdict.
    problems = []
    summary = {"minutes": args.minutes, "warmup_s": warmup, "responses": stats.responses, "by_kind": stats.by_kind,
               "ws_messages": stats.ws_messages, "sse_events": stats.sse_events, "stalls_cut": stats.stalls_cut,
               "never_read_clients": stats.never_read_clients, "never_read_cut": stats.never_read_cut, "client_failures": stats.failures,
               "failure_examples": stats.failure_examples, "generator_cpu_s": round(generator_cpu, 1),
               "generator_cpu_share": round(generator_cpu / (load_end + 1), 3), "servers": {}}
    for name, pid in pids.items():
        series = [r for r in rows if r["server"] == name]
        loaded = [r for r in series if r["phase"] == "load"]
        post_warmup = [int(r["rss_kib"]) for r in loaded[:3]]
        end = [int(r["rss_kib"]) for r in loaded[-3:]]
        rss_post = sum(post_warmup) / max(1, len(post_warmup))
        rss_end = sum(end) / max(1, len(end))
        growth = (rss_end - rss_post) / rss_post if rss_post else 0
        info = {"rss_start_kib": start_rss[name], "rss_post_warmup_kib": round(rss_post),
                "rss_peak_kib": max(int(r["rss_kib"]) for r in series), "rss_end_kib": round(rss_end),
                "rss_after_kib": int(series[-1]["rss_kib"]), "rss_growth": round(growth, 4),
                "fds_base": base_fds[name], "fds_peak": max(int(r["fds"]) for r in series), "fds_after": settled[name],
                "cpu_s": series[-1]["cpu_s"]}
        summary["servers"][name] = info
        if len(post_warmup) < 3:
            problems.append(f"{name}: too short a run to judge growth (fewer than 3 samples after warm-up)")
        elif growth > 0.05:
            problems.append(f"{name}: RSS grew {growth * 100:.1f} % after warm-up ({rss_post / 1024:.1f} -> {rss_end / 1024:.1f} MiB)")
        if settled[name] > base_fds[name]:
            problems.append(f"{name}: {settled[name]} descriptors open after the clients left, base {base_fds[name]}")
    p99s = [float(r["hello_p99_ms"]) for r in rows if r["hello_p99_ms"]]
    summary["hello_p99_ms"] = {"first": p99s[0] if p99s else None, "median": sorted(p99s)[len(p99s) // 2] if p99s else None,
                               "max": max(p99s) if p99s else None, "last": p99s[-1] if p99s else None}
    try:
        served, errors, _ = scrape_metrics(args.metrics_port)
    except Exception as error:
        served, errors = None, None
        problems.append(f"metrics unreadable: {error!r}")
    summary["https_server_requests"] = served
    summary["https_server_5xx"] = errors
    if stats.unasked_5xx_count:
        problems.append(f"{stats.unasked_5xx_count} unasked-for 5xx responses: {stats.unasked_5xx[:10]}")
    summary["asked_5xx"] = stats.asked_5xx
    # The server's metrics count the 5xx its router answered (501 for an unknown method), not the parser's
    # refusals: no more than the clients asked for.
    if errors and errors > stats.asked_5xx.get("https", 0):
        problems.append(f"the HTTPS server's metrics count {errors} 5xx responses, {stats.asked_5xx.get('https', 0)} asked for")
    summary["problems"] = problems
    with open(args.summary, "w") as handle:
        json.dump(summary, handle, indent=2)
    print(json.dumps(summary, indent=2))
    if problems:
        print("SOAK FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("SOAK PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
