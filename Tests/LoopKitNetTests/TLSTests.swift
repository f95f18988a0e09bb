import Foundation
import LoopKit
import LoopKitNet
import LoopKitTLS
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// TLS on the connection layer: verified handshakes both ways, refusals with OpenSSL's reasons, bad input
/// that ends one connection and never the server, reload, mutual TLS, and real peers (`openssl`). ALPN and
/// the write path have suites of their own (`TLSALPNTests`, `TLSWriteCoalescingTests`).
@Suite("TLS: handshakes, verification, bad input, reload, mutual TLS, real peers")
struct TLSTests: TLSEchoSuite {
    let certificates = TestCertificates.shared

    @Test func aVerifiedClientAndServerSpeakTLS13() async throws {
        try await withServer(try certificates.serverContext()) { loop, address, reasons, infos, listener in
            let answer = try await exchange("hello", at: address, on: loop, client: try certificates.clientContext())
            #expect(answer == "echo: hello\n")
            #expect(infos.all.first?.version == "TLSv1.3")
            #expect(await eventually { reasons.all == [.closedLocally] })
        }
    }

    @Test func tls12IsAcceptedAndAMinimumOfTLS13RefusesIt() async throws {
        try await withServer(try certificates.serverContext { $0.minimumVersion = .tls13 }) { loop, address, _, _, listener in
            let old = try await run("/usr/bin/openssl", ["s_client", "-connect", "\(address)", "-tls1_2", "-CAfile", certificates.caPEM],
                              input: Data())
            #expect(old.status != 0)  // the server refuses TLS 1.2
            #expect(try await exchange("v13", at: address, on: loop, client: try certificates.clientContext()) == "echo: v13\n")
        }
        try await withServer(try certificates.serverContext()) { _, address, _, infos, _ in
            let tls12 = try await run("/usr/bin/openssl", ["s_client", "-connect", "\(address)", "-tls1_2", "-CAfile", certificates.caPEM,
                                                     "-verify_return_error", "-quiet"], input: Data("v12\n".utf8))
            #expect(tls12.output == "echo: v12\n")
            #expect(await eventually { infos.all.first?.version == "TLSv1.2" })
        }
    }

    @Test func theClientRefusesACertificateForAnotherHost() async throws {
        let server = try TLSContext(.server(certificateChain: .file(certificates.wrongHostPEM), privateKey: .file(certificates.wrongHostKey)))
        try await withServer(server) { loop, address, reasons, infos, listener in
            await #expect {
                _ = try await exchange("x", at: address, on: loop, client: try certificates.clientContext())
            } throws: { error in
                guard case NetError.tls(let reason) = error else { return false }
                return reason.contains("certificate verify failed") && reason.contains("hostname mismatch")
            }
            #expect(await eventually { listener.connectionCount == 0 })  // ended, and the handler never saw it
            #expect(infos.all.isEmpty)
            _ = reasons
        }
    }

    @Test func aServerTheTrustRootsDoNotVouchForIsRefusedAndVerificationOffIsNamedSo() async throws {
        try await withServer(try certificates.serverContext()) { loop, address, _, _, listener in
            await #expect {
                _ = try await exchange("x", at: address, on: loop, client: try TLSContext(.client()))  // the system's roots
            } throws: { error in
                guard case NetError.tls(let reason) = error else { return false }
                return reason.contains("certificate verify failed")
            }
            let trusting = try TLSContext(TLSConfiguration(role: .client, verification: .insecureNoVerification))
            #expect(try await exchange("anyway", at: address, on: loop, client: trusting) == "echo: anyway\n")
        }
    }

    @Test func mutualTLSRequiresAClientCertificateAndShowsIt() async throws {
        let server = try certificates.serverContext {
            $0.verification = .full
            $0.trustRoots = .certificates(.file(certificates.caPEM))
        }
        try await withServer(server) { loop, address, reasons, infos, listener in
            await #expect(throws: NetError.self) {  // no client certificate: the server refuses
                let answer = try await exchange("anonymous", at: address, on: loop, client: try certificates.clientContext())
                if answer.isEmpty { throw NetError.tls("refused after the handshake") }  // TLS 1.3 refuses late
            }
            let client = try certificates.clientContext {
                $0.certificateChain = .file(certificates.clientPEM)
                $0.privateKey = .file(certificates.clientKey)
            }
            #expect(try await exchange("me", at: address, on: loop, client: client) == "echo: me\n")
            #expect(await eventually { infos.all.contains { $0.peerSubject?.contains("loopkit-client") == true } })
            #expect(infos.all.last?.peerCertificate?.isEmpty == false)
            _ = reasons
        }
    }

    @Test func aReloadedCertificateServesTheHandshakesAfterIt() async throws {
        let context = try certificates.serverContext()
        try await withServer(context) { loop, address, _, _, listener in
            let subjects = Recorder<String>()
            func peerSubject() async throws -> String? {
                try await onLoop(loop) {
                    let connection = try await Connection.connect(to: address, on: loop, tls: try certificates.clientContext(),
                                                                     serverName: "localhost")
                    let subject = connection.tlsInfo?.peerSubject
                    connection.abort()
                    return subject
                }
            }
            subjects.record(try await peerSubject() ?? "-")
            try context.reload(.server(certificateChain: .file(certificates.renewedPEM), privateKey: .file(certificates.renewedKey)))
            subjects.record(try await peerSubject() ?? "-")
            #expect(subjects.all.count == 2)
            #expect(subjects.all[0].hasSuffix("CN=localhost"))
            #expect(subjects.all[1].hasSuffix("CN=localhost-renewed"))
            #expect(throws: NetError.self) {  // a key that does not match: refused, the old one stays
                try context.reload(.server(certificateChain: .file(certificates.renewedPEM), privateKey: .file(certificates.serverKey)))
            }
        }
    }

    @Test func opensslsClientVerifiesTheServerAndIsAnswered() async throws {
        try await withServer(try certificates.serverContext()) { _, address, reasons, _, listener in
            let result = try await run("/usr/bin/openssl", ["s_client", "-connect", "\(address)", "-servername", "localhost",
                                                      "-CAfile", certificates.caPEM, "-verify_return_error", "-quiet"],
                                 input: Data("from s_client\n".utf8))
            #expect(result.status == 0)
            #expect(result.output == "echo: from s_client\n")
            #expect(await eventually { reasons.all == [.closedLocally] })
        }
    }

    @Test
    func theClientTalksToOpenSSLsServer() async throws {
        // A free port can be taken by another test's listener before s_server binds it: then s_server
        // exits, and the test tries another port (up to five).
        var server: (pid: pid_t, port: Int)?
        for _ in 0..<5 where server == nil {
            let port = try RawSocket.freePort()
            let pid = Self.startOpenSSLServer(port: port)
            let up = await eventually {
                Self.hasExited(pid) || (try? RawSocket(port: port)).map { $0.close(); return true } ?? false
            }
            if up && !Self.hasExited(pid) { server = (pid, port) } else { Self.stop(pid) }
        }
        let (pid, port) = try #require(server, "openssl s_server did not start on five free ports")
        defer { Self.stop(pid) }
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let page = try await onLoop(loop) {
            let connection = try await Connection.connect(host: "127.0.0.1", port: port, on: loop,
                                                             tls: try certificates.clientContext())
            try await connection.send("GET / HTTP/1.0\r\n\r\n")
            return String(decoding: try await readToEnd(from: connection), as: UTF8.self)
        }
        #expect(page.hasPrefix("HTTP/1.0 200 ok"))
    }

    /// Starts `openssl s_server -www` on 127.0.0.1:`port` with the test certificate; returns its pid.
    static func startOpenSSLServer(port: Int) -> pid_t {
        let certificates = TestCertificates.shared
        let arguments = ["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificates.serverPEM,
                         "-key", certificates.serverKey, "-www", "-quiet"]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        #expect(spawn(&pid, "/usr/bin/openssl", actions: &actions, argv: argv) == 0)
        return pid
    }

    /// Whether the child has exited (reaped here if so).
    static func hasExited(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid
    }

    /// Stops the child and reaps it (nothing when it was reaped already).
    static func stop(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// The count: 10,000 TLS connections, each a full handshake (no session resumption), an
    /// exchange and a graceful close; fewer under the thread sanitizer, which runs them ten times slower.
    static let connectionCount = {
        #if LOOPKIT_TSAN
        1_000
        #else
        10_000
        #endif
    }()

    @Test func tenThousandTLSConnectionsLeakNoDescriptor() async throws {
        try await withServer(try certificates.serverContext()) { loop, address, reasons, _, listener in
            let client = try certificates.clientContext()
            _ = try await exchange("warm-up", at: address, on: loop, client: client)
            #expect(await eventually { reasons.all.count == 1 })
            let before = openDescriptors(onPort: address.port)
            for index in 0..<Self.connectionCount {
                _ = try await exchange("n\(index)", at: address, on: loop, client: client)
            }
            #expect(await eventually { reasons.all.count == Self.connectionCount + 1 })
            #expect(reasons.all.allSatisfy { $0 == .closedLocally })
            #expect(await eventually { openDescriptors(onPort: address.port) <= before })
            #expect(listener.failedHandshakeCount == 0)
        }
    }
}

/// A blocking client socket on 127.0.0.1, for raw bytes.
final class RawSocket: Sendable {
    let fd: Int32

    init(port: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw NetError.system("connect", errno)
        }
        self.fd = fd
    }

    /// A port nothing listens on now (bound, then released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                _ = bind(fd, pointer, length)
                return getsockname(fd, pointer, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Everything until the peer closes (or resets).
    func readUntilClosed() -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return received }
            received += chunk[..<count]
        }
    }

    func close() { Glibc.close(fd) }
}
