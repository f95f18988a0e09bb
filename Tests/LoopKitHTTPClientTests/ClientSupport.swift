import Foundation
import HTTPTypes
import Logging
import LoopKit
import LoopKitHTTP
import LoopKitHTTPClient
import LoopKitNet
import Synchronization
import TestSupport

/// A Python peer (``peerServerScript``) on 127.0.0.1, stopped when dropped.
final class PeerServer {
    let port: Int
    private let child: TestSupport.ChildProcess

    static let scriptPath: String = {
        let path = NSTemporaryDirectory() + "loopkit-client-peer-\(getpid()).py"
        try! peerServerScript.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }()

    init(_ mode: String, _ arguments: [String] = []) throws {
        child = try TestSupport.ChildProcess("/usr/bin/env", ["python3", Self.scriptPath, mode] + arguments, output: .pipe, errors: .inherit)
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let more = child.output!.availableData
            guard !more.isEmpty else { break }
            line += more
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            child.terminate()
            _ = child.waitUntilExit()
            throw PeerError.noPort
        }
        self.port = port
    }

    enum PeerError: Error { case noPort }

    /// `http://127.0.0.1:PORT` (or `https://…`).
    func request(_ path: String, method: HTTPRequest.Method = .get, scheme: String = "http", host: String = "127.0.0.1",
                 fields: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: scheme, authority: "\(host):\(port)", path: path, headerFields: fields)
    }

    /// SIGKILL: the child inherits the spawning thread's signal mask, which may block SIGTERM.
    deinit {
        child.terminate(SIGKILL)
        _ = child.waitUntilExit()
    }
}

/// A LoopKitHTTP server on 127.0.0.1 port 0 with a few routes, on a loop of its own; with `tls`, HTTPS with
/// the certificate for `localhost` of ``ClientCertificates`` (ALPN offers `h2` and `http/1.1`).
final class LiveServer {
    let group: LoopGroup
    let server: HTTPServer
    let port: Int

    init(tls: Bool = false) throws {
        var router = HTTPRouter()
        router.get("/hello") { _ in HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/plain"], body: .string("Hello, World!")) }
        router.post("/echo") { request in HTTPServerResponse(status: .ok, body: .bytes(request.body)) }
        router.put("/echo") { request in HTTPServerResponse(status: .ok, body: .bytes(request.body)) }
        router.get("/chunked") { _ in
            HTTPServerResponse(status: .ok, body: .stream { writer in
                for part in 0..<50 { try await writer.write("part \(part);") }
            })
        }
        router.get("/fields") { request in
            .text(request.head.headerFields.map { "\($0.name.canonicalName)=\($0.value)" }.sorted().joined(separator: "\n"))
        }
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        if tls {
            let certificates = ClientCertificates.shared
            configuration.tls = try TLSContext(.server(certificateChain: .file(certificates.rightPEM),
                                                       privateKey: .file(certificates.rightKey)))
        }
        var logger = Logger(label: "test.client.server")
        logger.logLevel = .critical
        group = try LoopGroup(threads: 1, name: "client-test-server")
        server = HTTPServer(group: group, configuration: configuration, router: router, logger: logger)
        port = try server.start()
    }

    func request(_ path: String, method: HTTPRequest.Method = .get, scheme: String = "http", host: String = "127.0.0.1",
                 fields: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: scheme, authority: "\(host):\(port)", path: path, headerFields: fields)
    }

    deinit {
        server.beginShutdown()
        group.shutdown()
    }
}

/// A loop thread of the test's own for the client.
final class ClientLoop: Sendable {
    let group: LoopGroup
    var loop: EventLoop { group.loops[0] }
    /// The clients made here, kept as long as the loop (a client dropped ends its responses' bodies).
    private let clients = Mutex<[HTTPClient]>([])

    init() throws { group = try LoopGroup(threads: 1, name: "client-test") }

    /// With `LOOPKIT_TEST_CLIENT_ENGINE=automatic` in the environment every client is made with
    /// ``HTTPClient/Configuration/Engine/automatic`` and no decoding: the curl engine's suites then run on the
    /// own engine (those of decoding, TLS, proxies and h2 do not apply and fail so).
    func client(_ configuration: HTTPClient.Configuration = HTTPClient.Configuration()) -> HTTPClient {
        var configuration = configuration
        if ProcessInfo.processInfo.environment["LOOPKIT_TEST_CLIENT_ENGINE"] == "automatic" {
            configuration.engine = .automatic
            configuration.decompression = .disabled
        }
        let client = HTTPClient(on: loop, configuration: configuration)
        clients.withLock { $0.append(client) }
        return client
    }

    deinit { group.shutdown() }
}

/// The body as text, collected up to 64 MiB.
func text(_ response: HTTPClientResponse) async throws -> String {
    String(decoding: try await response.collect(upTo: 64 << 20), as: UTF8.self)
}

/// Waits, polling every 5 ms for at most 20 s, until `condition` holds; returns whether it did. A wait for
/// an event, never for an order or a duration.
@discardableResult
func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
    for _ in 0..<4000 {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}

/// A throwaway CA, a certificate for `localhost`/127.0.0.1 and one for `wrong.example`, made once per run
/// with the `openssl` command. No key is committed.
struct ClientCertificates: Sendable {
    let folder: String
    var caPEM: String { folder + "/ca.pem" }
    var rightPEM: String { folder + "/right.pem" }
    var rightKey: String { folder + "/right.key" }
    var wrongPEM: String { folder + "/wrong.pem" }
    var wrongKey: String { folder + "/wrong.key" }

    static let shared: ClientCertificates = {
        let folder = NSTemporaryDirectory() + "loopkit-client-tls-\(getpid())"
        try! FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let script = """
        set -e
        cd '\(folder)'
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
            -subj /CN=LoopKit-Client-Test-CA -days 2 2>/dev/null
        make() {
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key -out $1.csr -subj /CN=$2 2>/dev/null
            printf "subjectAltName=$3\\n" > $1.ext
            openssl x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $1.pem -days 2 -extfile $1.ext 2>/dev/null
        }
        make right localhost DNS:localhost,IP:127.0.0.1
        make wrong wrong.example DNS:wrong.example
        """
        let child = try! TestSupport.ChildProcess("/bin/sh", ["-c", script], output: .null)
        precondition(child.waitUntilExit() == 0, "openssl could not make the test certificates")
        return ClientCertificates(folder: folder)
    }()
}
