import Foundation
@testable import LoopDemoKit
import Testing
import TestSupport
@testable import LoopKitHTTP

/// `LoopDemo serve` as a deployer runs it: the built executable, its stdout lines, a signal to stop.
@Suite("LoopDemo serve, the executable")
struct ServeCommandTests {
    /// The LoopDemo built beside this test bundle (same build folder, whatever its configuration).
    static var executable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("LoopDemo")
    }

    /// What one run of `LoopDemo serve --metrics 0` answered: `requests` sent in turn to the server's port,
    /// then a scrape of `/metrics`, then SIGTERM.
    struct Run: Sendable {
        var answers: [String]
        var metricsContentType: String?
        var metrics: String
        var status: Int32
    }

    /// Starts the executable with `serve --port 0 --log-level warning` and `arguments`, waits for its
    /// `expectedLines` first lines ("listening on", then "metrics on" when asked for), runs `body` with
    /// them, then stops it (SIGTERM). Blocks: call on a thread of its own (``onOwnThread(_:)``).
    static func serving<T>(_ arguments: [String], expectedLines: Int = 1,
                           _ body: (_ process: ChildProcess, _ port: (String) throws -> Int) throws -> T) throws -> T {
        let process = try ChildProcess(Self.executable.path, ["serve", "--port", "0", "--log-level", "warning"] + arguments)
        defer { process.terminate() }
        let output = try #require(process.output)
        var lines: [String] = []
        var pending = Data()
        while lines.count < expectedLines {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            pending += chunk
            while let newline = pending.firstIndex(of: 10) {
                lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                pending = Data(pending[(newline + 1)...])
            }
        }
        func port(_ prefix: String) throws -> Int {
            let line = try #require(lines.first { $0.hasPrefix(prefix) }, "no '\(prefix)' line in \(lines)")
            return try #require(line.split(separator: ":").last.flatMap { Int($0) })
        }
        return try body(process, port)
    }

    /// Starts the executable, sends `requests` (raw HTTP/1.1, one connection each), scrapes, stops it.
    static func run(_ requests: [String]) async throws -> Run {
        try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "LoopDemo is not built beside the tests")
        return try await onOwnThread { () throws -> Run in
            try serving(["--metrics", "0"], expectedLines: 2) { process, port in
                let server = try port("listening on ")
                let answers = try requests.map { try RawClient(port: server).exchange($0).text }
                let metrics = try RawClient(port: try port("metrics on ")).exchange("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
                process.terminate()  // SIGTERM: a graceful stop, exit status 0
                return Run(answers: answers, metricsContentType: metrics.field("Content-Type"), metrics: metrics.text,
                           status: process.waitUntilExit())
            }
        }
    }

    /// What the server answered one request, and whether it said `Connection: close` and closed after it.
    struct Answer: Sendable {
        var status: Int
        var body: [UInt8]
        var closed: Bool
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Starts the executable with `arguments`, sends each request on a connection of its own (raw bytes,
    /// from a thread of their own while the answer is read: an echo answers while its body still
    /// arrives), and stops it.
    static func answers(_ arguments: [String], _ requests: [[UInt8]]) async throws -> [Answer] {
        try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "LoopDemo is not built beside the tests")
        return try await onOwnThread { () throws -> [Answer] in
            try serving(arguments) { _, port in
                let server = try port("listening on ")
                return try requests.map { request in
                    let client = try RawClient(port: server)
                    let fd = client.fd
                    let sent = DispatchSemaphore(value: 0)
                    Thread {
                        var offset = 0
                        while offset < request.count {
                            let count = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                            if count <= 0 { break }
                            offset += count
                        }
                        sent.signal()
                    }.start()
                    // The sender ends before the socket closes (a failed read shuts the socket so it does).
                    defer { sent.wait() }
                    do {
                        let response = try client.readResponse()
                        // Only a response that says it closes is waited on for the close (a kept-alive one would
                        // hold the read until its timeout).
                        let closes = response.field("Connection") == "close"
                        return Answer(status: response.status, body: response.body, closed: closes && client.isClosedByServer())
                    } catch {
                        shutdown(fd, Int32(SHUT_RDWR))
                        throw error
                    }
                }
            }
        }
    }

    /// A request to `path` with a sized body.
    static func sized(_ path: String, _ body: [UInt8]) -> [UInt8] {
        Array("POST \(path) HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
    }

    /// A request to `path` with a chunked body, in chunks of at most `chunkSize` bytes.
    static func chunked(_ path: String, _ body: [UInt8], chunkSize: Int = 8) -> [UInt8] {
        var request = Array("POST \(path) HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        var offset = 0
        while offset < body.count {
            let end = min(offset + chunkSize, body.count)
            request += Array("\(String(end - offset, radix: 16))\r\n".utf8) + body[offset..<end] + Array("\r\n".utf8)
            offset = end
        }
        return request + Array("0\r\n\r\n".utf8)
    }

    /// "received N sha256 HEX", as `/upload` answers for `body`.
    static func uploaded(_ body: [UInt8]) -> String {
        var digest = SHA256Digest()
        body.withUnsafeBytes { digest.update($0) }
        return "received \(body.count) sha256 \(digest.hexDigest())\n"
    }

    @Test func metricsAreServedInPrometheusTextFormatOnASecondPort() async throws {
        let result = try await Self.run(["GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"])
        #expect(result.metricsContentType?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(result.answers == ["Hello, World!"])
        #expect(result.metrics.contains("# TYPE loopkit_loop_iterations counter"))
        #expect(result.metrics.contains("loopkit_loop_iterations{loop=\"serve-0\"}"))
        #expect(result.metrics.contains("loopkit_loop_iteration_duration_bucket{loop=\"serve-0\",le=\"0.0001\"}"))
        #expect(result.metrics.contains("http_server_requests{http_request_method=\"GET\",http_response_status_class=\"2xx\"} 1"))
        #expect(result.metrics.contains("http_server_request_duration_count{"))
        #expect(result.status == 0)
    }

    /// `--max-body 10`: a `Content-Length` past it is refused at the head, on the streaming routes as on
    /// the collected ones, and the connection closes.
    @Test func maxBodyRefusesASizedBodyPastItOnEveryRoute() async throws {
        let body = Array("hello world".utf8)  // 11 bytes
        let answers = try await Self.answers(["--max-body", "10"],
                                             [Self.sized("/echo", body), Self.sized("/upload", body), Self.sized("/jobs?items=1", body)])
        #expect(answers.map(\.status) == [413, 413, 413])
        #expect(answers.map(\.closed) == [true, true, true])
    }

    /// `--max-body 10`: a chunked body is refused with 413 once it passes the limit (before any other
    /// answer: `/echo` reads a chunked body whole before it echoes), and the connection closes.
    @Test func maxBodyRefusesAChunkedBodyPastItOnEveryRoute() async throws {
        let body = Array("hello world".utf8)
        let answers = try await Self.answers(["--max-body", "10"],
                                             [Self.chunked("/echo", body), Self.chunked("/upload", body), Self.chunked("/jobs?items=1", body)])
        #expect(answers.map(\.status) == [413, 413, 413])
        #expect(answers.map(\.closed) == [true, true, true])
    }

    /// `--ws-max-message 10`: /ws/echo echoes a 10-byte message and fails an 11-byte one with 1009.
    @Test func webSocketMaxMessageSetsTheEchoRoutesLimit() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "LoopDemo is not built beside the tests")
        let (echoed, refused) = try await onOwnThread { () throws -> (WebSocketFrame?, UInt16?) in
            try Self.serving(["--ws-max-message", "10"]) { _, port in
                let server = try port("listening on ")
                let client = try WebSocketClient(port: server)
                client.sendText("0123456789")
                let echoed = try client.readFrame()
                client.sendText("0123456789a")
                return (echoed, try client.readClose()?.code)
            }
        }
        #expect(echoed == WebSocketFrame(opcode: .text, payload: Array("0123456789".utf8)))
        #expect(refused == 1009)
    }

    /// `--max-body 10`: a body of exactly 10 bytes, sized or chunked, is echoed and uploaded.
    @Test func maxBodyTakesABodyAtTheLimit() async throws {
        let body = Array("0123456789".utf8)
        let answers = try await Self.answers(["--max-body", "10"], [Self.sized("/echo", body), Self.chunked("/echo", body),
                                                                    Self.sized("/upload", body), Self.chunked("/upload", body)])
        #expect(answers.map(\.status) == [200, 200, 200, 200])
        #expect(answers.map(\.text) == ["0123456789", "0123456789", Self.uploaded(body), Self.uploaded(body)])
    }

    /// Without `--max-body`, `/echo` and `/upload` take bodies of any size (3 MiB here, past the 1 MiB
    /// that collected bodies get by default), sized or chunked.
    @Test func withoutMaxBodyEchoAndUploadTakeAnySize() async throws {
        let body = (0..<(3 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let answers = try await Self.answers([], [Self.sized("/echo", body), Self.sized("/upload", body),
                                                  Self.chunked("/upload", body, chunkSize: 64 * 1024)])
        #expect(answers.map(\.status) == [200, 200, 200])
        #expect(answers.first?.body == body)
        #expect(answers.dropFirst().map(\.text) == [Self.uploaded(body), Self.uploaded(body)])
    }

    /// `serve --root DIR` serves the directory under `/files/`: a file, a range of it, its directory's
    /// index, the redirect of the directory without its slash, and no way out of the root.
    @Test func serveRootServesADirectoryUnderFiles() async throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        try fixture.write("notes.txt", "0123456789")
        try fixture.write("site/index.html", "<h1>site</h1>")
        let answers = try await Self.answers(["--root", fixture.root], [
            Array("GET /files/notes.txt HTTP/1.1\r\nHost: t\r\n\r\n".utf8),
            Array("GET /files/notes.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=-3\r\n\r\n".utf8),
            Array("GET /files/site/ HTTP/1.1\r\nHost: t\r\n\r\n".utf8),
            Array("GET /files/site HTTP/1.1\r\nHost: t\r\n\r\n".utf8),
            Array("GET /files/%2e%2e/x HTTP/1.1\r\nHost: t\r\n\r\n".utf8),
            Array("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n".utf8),
        ])
        #expect(answers.map(\.status) == [200, 206, 200, 301, 400, 200])
        #expect(answers.prefix(3).map(\.text) == ["0123456789", "789", "<h1>site</h1>"])
    }

    /// `serve --root DIR` compresses the files (and the page) as the client accepts: Python's urllib3
    /// decodes each coding, a range is sent as it is, and curl gets the same over h2c.
    @Test func serveRootCompressesForUrllib3AndCurl() async throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        let text = (0..<400).map { "line \($0) of a served text file\n" }.joined()
        try fixture.write("page.txt", text)
        try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "LoopDemo is not built beside the tests")
        let root = fixture.root
        let (python, curl) = try await onOwnThread { () throws -> (String, String) in
            try Self.serving(["--root", root]) { _, port in
                let server = try port("listening on ")
                let script = """
                import sys, urllib3, zstandard
                base = f"http://127.0.0.1:{sys.argv[1]}"
                http = urllib3.PoolManager()
                for coding in ["gzip", "br", "zstd"]:
                    # urllib3 decodes gzip and br itself; its zstd needs backports.zstd, so zstandard decodes that.
                    r = http.request("GET", base + "/files/page.txt", headers={"Accept-Encoding": coding},
                                     decode_content=coding != "zstd")
                    data = zstandard.ZstdDecompressor().decompressobj().decompress(r.data) if coding == "zstd" else r.data
                    print(coding, r.status, r.headers.get("Content-Encoding"), r.headers.get("Vary"), len(data), data == open(sys.argv[2], "rb").read())
                r = http.request("GET", base + "/files/page.txt", headers={"Accept-Encoding": "br", "Range": "bytes=0-5"})
                print("range", r.status, r.headers.get("Content-Encoding"), r.data.decode())
                r = http.request("GET", base + "/", headers={"Accept-Encoding": "gzip"})
                print("page", r.status, r.headers.get("Content-Encoding"), b"<html" in r.data.lower())
                """
                let python = try runBlocking("/usr/bin/env", ["python3", "-c", script, "\(server)", root + "/page.txt"])
                let curl = try runBlocking("/usr/bin/curl", ["-sS", "--max-time", "30", "--http2-prior-knowledge", "--compressed",
                                                             "-H", "Accept-Encoding: zstd", "-w", " %{http_version}",
                                                             "http://127.0.0.1:\(server)/files/page.txt"])
                return (python.output, curl.output)
            }
        }
        let length = text.utf8.count
        #expect(python.contains("gzip 200 gzip Accept-Encoding \(length) True"))
        #expect(python.contains("br 200 br Accept-Encoding \(length) True"))
        #expect(python.contains("zstd 200 zstd Accept-Encoding \(length) True"))
        #expect(python.contains("range 206 None line 0"))
        #expect(python.contains("page 200 gzip True"))
        #expect(curl == text + " 2")
    }

    /// promtool's rule: every family has a `# HELP` line (with text) before its `# TYPE` line. The requests
    /// (one with a body) make the server's families appear beside the loops'.
    @Test func everyMetricFamilyHasAHelpLine() async throws {
        let result = try await Self.run([
            "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n",
            "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
        ])
        let lines = result.metrics.split(separator: "\n").map(String.init)
        let types = lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(types.count >= 13, "\(types)")
        for family in types {
            let help = lines.firstIndex { $0.hasPrefix("# HELP \(family) ") }
            let type = lines.firstIndex { $0.hasPrefix("# TYPE \(family) ") }
            #expect(help != nil && help! < type!, "no # HELP line before # TYPE \(family)")
            if let help { #expect(lines[help].count > "# HELP \(family) ".count + 10, "\(lines[help])") }
        }
        #expect(result.metrics.contains("# HELP http_server_request_body_size "))
    }
}

/// Runs `body` on a thread of its own (it blocks: a child process, sockets) and returns its result.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
