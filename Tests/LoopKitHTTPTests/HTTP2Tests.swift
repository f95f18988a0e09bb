import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitNet
import Synchronization
import Testing

/// HTTP/2 (RFC 9113) on nghttp2, tried with real clients: curl (`--http2-prior-knowledge`, `--http2` over
/// TLS), `nghttp` (a hundred streams at once), and Python's `h2` for frames a well-behaved client never
/// sends. The routes are the HTTP/1 tests' own: the dispatcher answers both codecs the same.
@Suite("HTTP/2: h2c and h2 over TLS, the same routes, flow control as backpressure, bad frames, GOAWAY")
struct HTTP2Tests {
    let certificates = HTTPSCertificates.shared

    /// The test routes, plus a streaming route that waits for `gate` before it reads its body.
    func router(gate: Gate = Gate()) -> HTTPRouter {
        var router = testRouter(gate: gate)
        router.on(.post, "/count", bodyLimit: nil) { _, body in
            var count = 0
            for try await chunk in body { count += chunk.count }
            return .text("counted \(count)")
        }
        router.on(.post, "/count-later", bodyLimit: nil) { _, body in
            await gate.wait()
            var count = 0
            for try await chunk in body { count += chunk.count }
            return .text("counted \(count)")
        }
        router.get("/open-gate") { _ in
            gate.open()
            return .text("open")
        }
        router.on(.post, "/small", bodyLimit: 10) { _, body in
            var count = 0
            for try await chunk in body { count += chunk.count }
            return .text("took \(count)")
        }
        addStreamedChunksRoute(to: &router)
        return router
    }

    func curl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await run("/usr/bin/curl", ["-sS", "--max-time", "60"] + arguments)
    }

    /// Runs a Python `h2` script against `port` (its `sys.argv[1]`); returns what it prints.
    func python(_ script: String, port: Int) async throws -> (status: Int32, output: String) {
        try await run("/usr/bin/env", ["python3", "-c", Self.pythonPrelude + script, "\(port)"])
    }

    /// A raw connection for the scripts: a socket, an `h2` client connection that does not check what
    /// it sends (bad input is the point), and `pump()` to read until the server has said all it will.
    static let pythonPrelude = """
    import socket, sys, time
    import h2.connection, h2.config, h2.events
    sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    sock.settimeout(10)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True,
        validate_outbound_headers=False, normalize_outbound_headers=False, validate_inbound_headers=False))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    def pump(until=lambda events: False, limit=5.0):
        seen = []
        end = time.time() + limit
        while time.time() < end:
            sock.settimeout(max(0.01, min(0.1, end - time.time())))
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                seen.append("closed")
                break
            try:
                events = conn.receive_data(data)
            except Exception as error:
                seen.append("client-error:" + type(error).__name__)
                break
            seen.extend(events)
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
            if until(seen):
                break
        return seen
    def names(events):
        return [type(e).__name__ if not isinstance(e, str) else e for e in events]

    """

    // MARK: The same routes

    @Test("h2c by prior knowledge: curl gets the HTTP/1 routes' answers over HTTP/2, HTTP/1.1 still works on the port")
    func curlSpeaksH2cWithPriorKnowledge() async throws {
        try await withServer(router: router()) { _, port in
            let base = "http://127.0.0.1:\(port)"
            let hello = try await curl(["--http2-prior-knowledge", "\(base)/hello", "-w", " %{http_version} %{http_code}"])
            #expect(hello.output == "Hello, World! 2 200")
            let user = try await curl(["--http2-prior-knowledge", "\(base)/users/42", "-w", " %{http_version}"])
            #expect(user.output == "user 42 2")
            let async = try await curl(["--http2-prior-knowledge", "\(base)/async"])
            #expect(async.output == "async on loop: true")
            let echo = try await curl(["--http2-prior-knowledge", "--data-binary", "ping pong", "\(base)/echo"])
            #expect(echo.output == "ping pong")
            let missing = try await curl(["--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/nope"])
            #expect(missing.output == "404")
            let plain = try await curl(["\(base)/hello", "-w", " %{http_version}"])
            #expect(plain.output == "Hello, World! 1.1")
        }
    }

    @Test("Streamed bodies both ways over h2c: a 3 MiB upload counted by a streaming route, a 1 MiB streamed response")
    func streamedBodiesBothWays() async throws {
        try await withServer(router: router()) { _, port in
            let upload = FileManager.default.temporaryDirectory.appendingPathComponent("loopkit-h2-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: upload) }
            try Data(repeating: 0x61, count: 3 << 20).write(to: upload)
            let counted = try await curl(["--http2-prior-knowledge", "--data-binary", "@\(upload.path)", "http://127.0.0.1:\(port)/count"])
            #expect(counted.output == "counted \(3 << 20)")
            let streamed = try await curl(["--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{size_download} %{http_version}",
                                           "http://127.0.0.1:\(port)/stream?bytes=\(1 << 20)"])
            #expect(streamed.output == "\(1 << 20) 2")
        }
    }

    @Test("h2 over TLS by ALPN: curl offers h2 and http/1.1 and is answered in HTTP/2")
    func curlGetsH2ByALPN() async throws {
        let tls = try TLSContext(.server(certificateChain: .file(certificates.serverPEM), privateKey: .file(certificates.serverKey)))
        try await withServer(router: router(), configure: { $0.tls = tls }) { _, port in
            let result = try await run("/bin/sh", ["-c", "/usr/bin/curl -sS -v --http2 --cacert \"$0\" --resolve localhost:$1:127.0.0.1 "
                                                   + "https://localhost:$1/hello 2>&1", certificates.caPEM, "\(port)"])
            #expect(result.status == 0)
            #expect(result.output.contains("ALPN: server accepted h2"))
            #expect(result.output.contains("< HTTP/2 200"))
            #expect(result.output.hasSuffix("Hello, World!"))
        }
    }

    @Test("A hundred streams at once on one connection (nghttp -m 100): each answered")
    func aHundredConcurrentStreams() async throws {
        try await withServer(router: router()) { _, port in
            let result = try await run("/usr/bin/nghttp", ["-n", "-s", "-m", "100", "http://127.0.0.1:\(port)/users/7"])
            #expect(result.status == 0)
            let answered = result.output.split(separator: "\n").filter { $0.contains("/users/7") && $0.contains("200") }
            #expect(answered.count == 100, "\(result.output)")
        }
    }

    @Test("A body over the route's limit is answered 413 on its stream, and the connection serves the next")
    func bodyOverTheLimitIs413() async throws {
        try await withServer(router: router()) { _, port in
            let result = try await python("""
            conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", "x"), (":path", "/small")])
            conn.send_data(1, b"x" * 100, end_stream=True)
            conn.send_headers(3, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello")], end_stream=True)
            sock.sendall(conn.data_to_send())
            events = pump(lambda seen: sum(isinstance(e, h2.events.StreamEnded) or isinstance(e, h2.events.StreamReset) for e in seen) >= 2)
            for e in events:
                if isinstance(e, h2.events.ResponseReceived):
                    print(e.stream_id, dict(e.headers)[b":status"].decode())
            """, port: port)
            #expect(result.output.contains("1 413"), "\(result.output)")
            #expect(result.output.contains("3 200"), "\(result.output)")
        }
    }

    @Test("Expect: 100-continue gets a 100 before the body, for a collected route and for a streaming route once it reads")
    func expectContinueIsAnswered() async throws {
        try await withServer(router: router()) { _, port in
            let result = try await python("""
            for stream, path in ((1, "/echo"), (3, "/count")):
                conn.send_headers(stream, [(":method", "POST"), (":scheme", "http"), (":authority", "x"), (":path", path),
                                           ("expect", "100-continue")])
                sock.sendall(conn.data_to_send())
                events = pump(lambda seen: any(isinstance(e, h2.events.InformationalResponseReceived) for e in seen), limit=10)
                print(stream, [dict(e.headers)[b":status"].decode() for e in events
                               if isinstance(e, h2.events.InformationalResponseReceived)])
                conn.send_data(stream, b"ping", end_stream=True)
                sock.sendall(conn.data_to_send())
                events = pump(lambda seen: any(isinstance(e, h2.events.StreamEnded) for e in seen), limit=10)
                print(stream, b"".join(e.data for e in events if isinstance(e, h2.events.DataReceived)).decode())
            """, port: port)
            #expect(result.output == "1 ['100']\n1 ping\n3 ['100']\n3 counted 4\n", "\(result.output)")
        }
    }

    // MARK: Flow control

    @Test("Flow control is backpressure: a handler that does not read keeps its stream's window shut; reading opens it")
    func aHandlerThatDoesNotReadShutsItsWindow() async throws {
        try await withServer(router: router()) { _, port in
            let result = try await python("""
            conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", "x"), (":path", "/count-later")])
            sock.sendall(conn.data_to_send())
            pump(limit=0.3)
            total = 0
            stalled = None
            deadline = time.time() + 60
            while total < 1048576 and time.time() < deadline:
                window = conn.local_flow_control_window(1)
                if window == 0:
                    pump(limit=0.5)
                    if stalled is None and conn.local_flow_control_window(1) == 0:
                        # Half a second without a window update: what the server let in while its handler
                        # read nothing. Now the handler is let through (by a request on another stream).
                        stalled = total
                        conn.send_headers(3, [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                                              (":path", "/open-gate")], end_stream=True)
                        sock.sendall(conn.data_to_send())
                    continue
                size = min(window, 16384, 1048576 - total)
                conn.send_data(1, b"x" * size)
                total += size
                sock.sendall(conn.data_to_send())
            conn.end_stream(1)
            sock.sendall(conn.data_to_send())
            events = pump(lambda seen: any(isinstance(e, h2.events.StreamEnded) and e.stream_id == 1 for e in seen), limit=20)
            body = b"".join(e.data for e in events if isinstance(e, h2.events.DataReceived) and e.stream_id == 1)
            print("stalled at", stalled, "sent", total, body.decode())
            """, port: port)
            // Before the handler reads: the window the server advertised plus the body buffer it fills, far
            // below the 1 MiB the client has to send; after, the rest.
            let stalledAt = result.output.split(separator: " ").dropFirst(2).first.flatMap { Int($0) } ?? -1
            #expect(stalledAt > 0 && stalledAt <= 256 * 1024, "stalled at \(stalledAt): \(result.output)")
            #expect(result.output.hasSuffix("sent 1048576 counted 1048576\n"), "\(result.output)")
        }
    }

    // MARK: RFC 9113's MUSTs

    @Test("A request with trailers is answered (RFC 9113 §8.1; nginx 1.22 answers GOAWAY)")
    func trailersAreAccepted() async throws {
        try await withServer(router: router()) { _, port in
            let result = try await python("""
            conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", "x"), (":path", "/echo")])
            conn.send_data(1, b"body")
            conn.send_headers(1, [("x-checksum", "abc")], end_stream=True)
            sock.sendall(conn.data_to_send())
            events = pump(lambda seen: any(isinstance(e, h2.events.StreamEnded) for e in seen))
            print(names(events))
            print(b"".join(e.data for e in events if isinstance(e, h2.events.DataReceived)).decode())
            """, port: port)
            #expect(result.output.contains("ResponseReceived"), "\(result.output)")
            #expect(result.output.hasSuffix("body\n"), "\(result.output)")
        }
    }

    @Test("Connection-specific fields and a pseudo-header after a regular field reset the stream with PROTOCOL_ERROR (§8.2.2, §8.3)")
    func malformedRequestsAreReset() async throws {
        try await withServer(router: router()) { _, port in
            let result = try await python("""
            conn.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello"),
                                  ("connection", "keep-alive")], end_stream=True)
            conn.send_headers(3, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello"),
                                  ("te", "gzip")], end_stream=True)
            conn.send_headers(5, [(":method", "GET"), ("user-agent", "x"), (":scheme", "http"), (":authority", "x"),
                                  (":path", "/hello")], end_stream=True)
            conn.send_headers(7, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello")], end_stream=True)
            sock.sendall(conn.data_to_send())
            events = pump(lambda seen: sum(isinstance(e, (h2.events.StreamReset, h2.events.StreamEnded)) for e in seen) >= 4)
            for e in events:
                if isinstance(e, h2.events.StreamReset):
                    print("reset", e.stream_id, int(e.error_code))
                if isinstance(e, h2.events.ResponseReceived):
                    print("response", e.stream_id)
            """, port: port)
            #expect(result.output.contains("reset 1 1"), "\(result.output)")  // PROTOCOL_ERROR is 1
            #expect(result.output.contains("reset 3 1"), "\(result.output)")
            #expect(result.output.contains("reset 5 1"), "\(result.output)")
            #expect(result.output.contains("response 7"), "\(result.output)")
            #expect(!result.output.contains("response 1") && !result.output.contains("response 3") && !result.output.contains("response 5"))
        }
    }

    @Test("A first frame that is not SETTINGS ends the connection with GOAWAY PROTOCOL_ERROR (§3.4)")
    func aFirstFrameOtherThanSettingsIsAConnectionError() async throws {
        try await withServer(router: router()) { _, port in
            let result = try await run("/usr/bin/env", ["python3", "-c", """
            import socket, sys
            sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            sock.settimeout(10)
            ping = b"\\x00\\x00\\x08\\x06\\x00\\x00\\x00\\x00\\x00" + b"12345678"
            sock.sendall(b"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n" + ping)
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            offset = 0
            while offset + 9 <= len(data):
                length = int.from_bytes(data[offset:offset + 3], "big")
                kind = data[offset + 3]
                if kind == 7:
                    print("goaway", int.from_bytes(data[offset + 13:offset + 17], "big"))
                offset += 9 + length
            print("closed")
            """, "\(port)"])
            #expect(result.output == "goaway 1\nclosed\n", "\(result.output)")
        }
    }

    @Test("DATA on a closed stream is a STREAM_CLOSED error (§6.1; nginx 1.22 ignores it)")
    func dataOnAClosedStreamIsRefused() async throws {
        try await withServer(router: router()) { _, port in
            let result = try await python("""
            conn.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello")], end_stream=True)
            sock.sendall(conn.data_to_send())
            pump(lambda seen: any(isinstance(e, h2.events.StreamEnded) for e in seen))
            frame = b"\\x00\\x00\\x04\\x00\\x00\\x00\\x00\\x00\\x01" + b"late"
            sock.sendall(frame)
            data = b""
            try:
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except socket.timeout:
                pass
            offset = 0
            while offset + 9 <= len(data):
                length = int.from_bytes(data[offset:offset + 3], "big")
                kind = data[offset + 3]
                if kind == 3:
                    print("rst", int.from_bytes(data[offset + 9:offset + 13], "big"))
                if kind == 7:
                    print("goaway", int.from_bytes(data[offset + 13:offset + 17], "big"))
                offset += 9 + length
            """, port: port)
            #expect(result.output.contains("goaway 5") || result.output.contains("rst 5"), "\(result.output)")  // STREAM_CLOSED is 5
        }
    }

    @Test("A reset storm (rapid reset) ends the connection with GOAWAY before the server runs every request")
    func aRapidResetStormEndsTheConnection() async throws {
        try await withServer(router: router(), configure: { $0.http2?.resetBurst = 50; $0.http2?.resetsPerSecond = 5 }) { _, port in
            let result = try await python("""
            import h2.errors
            sent = 0
            try:
                for stream in range(1, 2000, 2):
                    conn.send_headers(stream, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello")])
                    conn.reset_stream(stream, h2.errors.ErrorCodes.CANCEL)
                    sock.sendall(conn.data_to_send())
                    sent += 1
            except Exception:
                pass
            events = pump(lambda seen: any(isinstance(e, h2.events.ConnectionTerminated) for e in seen))
            print(names(events)[-3:], sent)
            """, port: port)
            #expect(result.output.contains("ConnectionTerminated"), "\(result.output)")
        }
    }

    // MARK: Deadlines

    @Test("An HTTP/2 connection with no stream open past the idle timeout is sent GOAWAY and closed")
    func anIdleConnectionIsClosed() async throws {
        try await withServer(router: router(), configure: { $0.idleTimeout = .milliseconds(300) }) { server, port in
            let result = try await python("""
            conn.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello")], end_stream=True)
            sock.sendall(conn.data_to_send())
            events = pump(lambda seen: "closed" in seen, limit=30)
            print(names(events))
            """, port: port)
            #expect(result.output.contains("StreamEnded"), "\(result.output)")
            #expect(result.output.contains("'ConnectionTerminated', 'closed'"), "\(result.output)")
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
        }
    }

    // MARK: Shutdown

    @Test("Graceful shutdown sends GOAWAY; a stream in flight finishes, then the connection closes")
    func gracefulShutdownLetsAStreamInFlightFinish() async throws {
        let gate = Gate()
        try await withServer(router: router(gate: gate), configure: { $0.shutdownDeadline = probeSafeShutdownDeadline }) { server, port in
            async let client = python("""
            conn.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/gate")], end_stream=True)
            sock.sendall(conn.data_to_send())
            # Read raw frames to the end (the h2 library refuses frames after a GOAWAY, which a server may send).
            sock.settimeout(30)
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            offset, seen, body = 0, [], b""
            while offset + 9 <= len(data):
                length = int.from_bytes(data[offset:offset + 3], "big")
                kind, flags = data[offset + 3], data[offset + 4]
                stream = int.from_bytes(data[offset + 5:offset + 9], "big") & 0x7fffffff
                payload = data[offset + 9:offset + 9 + length]
                if kind == 7:
                    seen.append("goaway last=%d code=%d" % (int.from_bytes(payload[0:4], "big"), int.from_bytes(payload[4:8], "big")))
                elif kind == 1 and stream == 1:
                    seen.append("headers")
                elif kind == 0 and stream == 1:
                    body += payload
                    if flags & 1:
                        seen.append("end")
                offset += 9 + length
            print(seen)
            print(body.decode())
            """, port: port)
            #expect(try await eventually { gate.arrivals == 1 })
            async let shutdown: Void = server.shutdown()
            // The listener closes, then the drain (the GOAWAY) is queued on the loop: the handler, let
            // through after that, is resumed by a job queued behind it.
            try await waitUntilStoppedAccepting(port: port)
            gate.open()
            let result = try await client
            await shutdown
            // GOAWAY first (the last stream taken is the one in flight, no error), then its answer, then the close.
            #expect(result.output.hasPrefix("['goaway last=1 code=0', 'headers', 'end']\n"), "\(result.output)")
            #expect(result.output.hasSuffix("opened\n"), "\(result.output)")
        }
    }
}
