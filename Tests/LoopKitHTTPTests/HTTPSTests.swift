import Foundation
import Synchronization
import LoopKit
import LoopKitNet
import Testing
import TestSupport
@testable import LoopKitHTTP

#if canImport(Glibc)
import Glibc
#endif

/// HTTPS: everything HTTP/1.1 does works over TLS, tried with real clients: curl (`--cacert`, keep-alive,
/// a streamed upload, ALPN), `openssl s_client` (ALPN), Python's `ssl` (pipelining, bad HTTP inside TLS),
/// and graceful shutdown.
@Suite("HTTPS: ALPN, keep-alive, pipelining, streamed bodies, bad input and graceful shutdown over TLS")
struct HTTPSTests {
    let certificates = HTTPSCertificates.shared

    /// Runs `body` with a one-loop HTTPS server on the test routes plus a streamed `/count`.
    func withHTTPSServer(gate: Gate = Gate(), shutdownDeadline: Duration = .seconds(10), http2: HTTP2Settings? = HTTP2Settings(),
                         _ body: (HTTPServer, Int) async throws -> Void) async throws {
        var router = testRouter(gate: gate)
        router.on(.post, "/count", bodyLimit: nil) { _, body in
            var count = 0
            for try await chunk in body { count += chunk.count }
            return .text("counted \(count)")
        }
        addStreamedChunksRoute(to: &router)
        let tls = try TLSContext(.server(certificateChain: .file(certificates.serverPEM), privateKey: .file(certificates.serverKey)))
        try await withServer(router: router, configure: { $0.tls = tls; $0.shutdownDeadline = shutdownDeadline; $0.http2 = http2 }, body)
    }

    @Test func curlVerifiesTheServerAndKeepsTheConnectionAlive() async throws {
        try await withHTTPSServer { _, port in
            let url = "https://localhost:\(port)/hello"
            // Two URLs in one curl: the second reuses the first's connection (one connect in all).
            let result = try await run("/usr/bin/curl", ["-sS", "--cacert", certificates.caPEM, "--resolve", "localhost:\(port):127.0.0.1",
                                                   url, url, "-w", " connects=%{num_connects}\n"])
            #expect(result.status == 0)
            #expect(result.output == "Hello, World! connects=1\nHello, World! connects=0\n")
        }
    }

    @Test func curlAndOpenSSLAreAnsweredWithHTTP11ByALPNWhenHTTP2IsOff() async throws {
        try await withHTTPSServer(http2: nil) { _, port in
            let curl = try await run("/bin/sh", ["-c", "/usr/bin/curl -sS -v -o /dev/null --cacert \"$0\" --resolve localhost:$1:127.0.0.1 "
                                                 + "https://localhost:$1/hello 2>&1", certificates.caPEM, "\(port)"])
            #expect(curl.status == 0)
            #expect(curl.output.contains("ALPN: offers h2,http/1.1"))
            #expect(curl.output.contains("ALPN: server accepted http/1.1"))
            let openssl = try await run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost",
                                                       "-CAfile", certificates.caPEM, "-verify_return_error", "-alpn", "http/1.1"],
                                  input: Data())
            #expect(openssl.status == 0)
            #expect(openssl.output.contains("ALPN protocol: http/1.1"))
        }
    }

    @Test func aLoopKitClientOfferingH2AndHTTP11GetsHTTP11AndItsResponseWhenHTTP2IsOff() async throws {
        try await withHTTPSServer(http2: nil) { _, port in
            let group = try LoopGroup(threads: 1)
            defer { group.shutdown() }
            let loop = group.loops[0]
            let client = try TLSContext(.client(trustRoots: .certificates(.file(certificates.caPEM))))
                .withApplicationProtocols(["h2", "http/1.1"])
            let (chosen, response) = try await Task(executorPreference: loop) {
                let connection = try await Connection.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: port), on: loop,
                                                                 tls: client, serverName: "localhost")
                let chosen = connection.applicationProtocol
                try await connection.send("GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                var response: [UInt8] = []
                for try await chunk in connection.inbound { response += chunk }
                return (chosen, String(decoding: response, as: UTF8.self))
            }.value
            #expect(chosen == "http/1.1")
            #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(response.hasSuffix("\r\n\r\nHello, World!"))
        }
    }

    @Test func curlWithoutTheCAIsRefused() async throws {
        try await withHTTPSServer { server, port in
            let result = try await run("/usr/bin/curl", ["-sS", "https://127.0.0.1:\(port)/hello"])
            #expect(result.status == 60)  // curl: the peer's certificate cannot be authenticated
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
        }
    }

    @Test func aStreamedUploadOverTLSIsCountedWhole() async throws {
        try await withHTTPSServer { _, port in
            let path = NSTemporaryDirectory() + "loopkit-https-upload-\(getpid())"
            let megabytes = 8
            #expect(FileManager.default.createFile(atPath: path, contents: Data(count: megabytes << 20)))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let result = try await run("/usr/bin/curl", ["-sS", "--cacert", certificates.caPEM, "--resolve", "localhost:\(port):127.0.0.1",
                                                   "-X", "POST", "-H", "Transfer-Encoding: chunked", "-T", path, "https://localhost:\(port)/count"])
            #expect(result.status == 0)
            #expect(result.output == "counted \(megabytes << 20)")
        }
    }

    @Test func aStreamedResponseOfLargeChunksArrivesWholeOverTLS() async throws {
        try await withHTTPSServer { _, port in
            let path = NSTemporaryDirectory() + "loopkit-https-chunks-\(getpid())"
            defer { try? FileManager.default.removeItem(atPath: path) }
            // Chunks below and above the size from which they are sent by reference, 16 times: 2.9 MB.
            let sizes = [100, 2_048, 5_000, 70_000, 10, 65_536, 40_000]
            let url = "https://localhost:\(port)/chunks?sizes=\(sizes.map(String.init).joined(separator: ","))&repeat=16"
            let result = try await run("/usr/bin/curl", ["-sS", "--cacert", certificates.caPEM, "--resolve", "localhost:\(port):127.0.0.1",
                                                   "-o", path, url])
            #expect(result.status == 0)
            let received = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let expected = streamedChunks(sizes: sizes, rounds: 16).flatMap { $0 }
            let same = received == expected  // not in the expectation: a failure would print megabytes
            #expect(same, "received \(received.count) bytes, expected \(expected.count)")
        }
    }

    @Test func pipelinedRequestsOverTLSAreAnsweredInOrder() async throws {
        try await withHTTPSServer { _, port in
            let requests = "GET /users/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /users/2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            let result = try await run("/usr/bin/python3", ["-c", Python.tlsExchange, "\(port)", certificates.caPEM, requests])
            #expect(result.status == 0)
            #expect(result.output.components(separatedBy: "HTTP/1.1 200 OK\r\n").count == 4)  // three answers
            let order = ["user 1", "Hello, World!", "user 2"].map { result.output.range(of: $0)?.lowerBound }
            #expect(order.allSatisfy { $0 != nil })
            #expect(order.compactMap { $0 } == order.compactMap { $0 }.sorted())
        }
    }

    @Test func badHTTPInsideTLSGets400AndAClosedConnection() async throws {
        try await withHTTPSServer { server, port in
            let result = try await run("/usr/bin/python3", ["-c", Python.tlsExchange, "\(port)", certificates.caPEM,
                                                      "GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n"])
            #expect(result.status == 0)
            #expect(result.output.hasPrefix("HTTP/1.1 400 "))
            #expect(result.output.contains("\r\nConnection: close\r\n") || result.output.lowercased().contains("connection: close"))
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
        }
    }

    @Test func gracefulShutdownFinishesAnInFlightRequestOverTLS() async throws {
        let gate = Gate()
        try await withHTTPSServer(gate: gate, shutdownDeadline: probeSafeShutdownDeadline) { server, port in
            let client = Task.detached {
                try await run("/usr/bin/python3", ["-c", Python.tlsExchange, "\(port)", certificates.caPEM, "GET /gate HTTP/1.1\r\nHost: t\r\n\r\n"])
            }
            let arrived = try await eventually { gate.arrivals > 0 }
            #expect(arrived, "the request never reached the handler")
            let shutdown = Task { await server.shutdown() }
            try await waitUntilStoppedAccepting(port: port)
            gate.open()
            let result = try await client.value
            #expect(result.status == 0, "python: \(lastRunErrors.withLock { $0 })")
            #expect(result.output.hasPrefix("HTTP/1.1 200 "))
            #expect(result.output.lowercased().contains("connection: close"))
            #expect(result.output.hasSuffix("opened"))
            await shutdown.value
        }
    }
}

/// Python clients (standard library only).
private enum Python {
    /// Over TLS to 127.0.0.1:argv[1], verifying the certificate against the CA file argv[2] for the name
    /// `localhost`: sends argv[3] in one write, prints everything read until the server closes. Each read
    /// waits up to 150 s: a test may hold the answer while it waits for the listener to close (up to 20 s
    /// under load) and its shutdown deadline is 120 s (`probeSafeShutdownDeadline`).
    static let tlsExchange = """
    import socket, ssl, sys
    context = ssl.create_default_context(cafile=sys.argv[2])
    raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=150)
    s = context.wrap_socket(raw, server_hostname="localhost")
    s.sendall(sys.argv[3].encode())
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (ssl.SSLEOFError, ConnectionResetError):
            break
        if not chunk: break
        data += chunk
    sys.stdout.write(data.decode("latin-1"))
    """
}

/// A throwaway CA and an ECDSA P-256 certificate for `localhost` and 127.0.0.1, made once per test run
/// with the `openssl` command into a temporary folder. No key is committed to the repository.
struct HTTPSCertificates: Sendable {
    let folder: String
    var caPEM: String { folder + "/ca.pem" }
    var serverPEM: String { folder + "/server.pem" }
    var serverKey: String { folder + "/server.key" }

    static let shared: HTTPSCertificates = {
        let folder = NSTemporaryDirectory() + "loopkit-https-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)  // test support: a stale folder is fine to lose
        try! FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let script = """
        set -e
        cd '\(folder)'
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
            -subj /CN=LoopKit-HTTPS-Test-CA -days 2
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj /CN=localhost
        printf "subjectAltName=DNS:localhost,IP:127.0.0.1\\n" > server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
        """
        let result = try! runBlocking("/bin/sh", ["-c", script])
        precondition(result.status == 0, "openssl could not make the test certificates")
        return HTTPSCertificates(folder: folder)
    }()
}

/// What the last failed `run` wrote to standard error (diagnostics for a failing expectation).
let lastRunErrors = Mutex<String>("")

/// `runBlocking` on a thread of its own: the test's task waits without holding one of the few threads of
/// Swift's cooperative pool. (A child process blocking a pool thread for seconds, in several tests at once,
/// starves every other test's tasks, a server's handler included, until the children time out.)
func run(_ executable: String, _ arguments: [String], input: Data? = nil) async throws -> (status: Int32, output: String) {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result { try runBlocking(executable, arguments, input: input) })
        }.start()
    }
}

/// Runs `executable` with `arguments`, feeding it `input`; returns its exit status and standard output.
func runBlocking(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> (status: Int32, output: String) {
    let errors = FileManager.default.temporaryDirectory.appendingPathComponent("loopkit-run-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: errors) }
    let child = try ChildProcess(executable, arguments, input: .pipe, output: .pipe, errors: .file(errors.path))
    if let input { child.input?.write(input) }
    try child.input?.close()
    let data = child.output?.readDataToEndOfFile() ?? Data()
    let status = child.waitUntilExit()
    if status != 0, let said = try? String(contentsOf: errors, encoding: .utf8), !said.isEmpty {
        lastRunErrors.withLock { $0 = said }
    }
    return (status, String(decoding: data, as: UTF8.self))
}
