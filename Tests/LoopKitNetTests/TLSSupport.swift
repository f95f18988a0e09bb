import Foundation
#if canImport(Glibc)
import Glibc
#endif
import LoopKit
import LoopKitNet
import LoopKitTLS
import TestSupport

/// A throwaway CA and certificates, made once per test run with the `openssl` command into a temporary
/// folder: a CA, a server certificate for `localhost` and 127.0.0.1 (ECDSA P-256), a second server
/// certificate (for reloads), one for the wrong host, one that has expired, and a client certificate
/// (mutual TLS). No key is committed to the repository.
struct TestCertificates: Sendable {
    let folder: String
    var caPEM: String { folder + "/ca.pem" }
    var serverPEM: String { folder + "/server.pem" }
    var serverKey: String { folder + "/server.key" }
    var renewedPEM: String { folder + "/renewed.pem" }
    var renewedKey: String { folder + "/renewed.key" }
    var wrongHostPEM: String { folder + "/wronghost.pem" }
    var wrongHostKey: String { folder + "/wronghost.key" }
    var clientPEM: String { folder + "/client.pem" }
    var clientKey: String { folder + "/client.key" }
    var expiredPEM: String { folder + "/expired.pem" }
    var expiredKey: String { folder + "/expired.key" }

    /// Made on first use (thread-safe: a static's initialiser runs once).
    static let shared: TestCertificates = {
        let folder = NSTemporaryDirectory() + "loopkit-tls-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)  // test support: a stale folder is fine to lose
        try! FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let script = """
        set -e
        cd '\(folder)'
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
            -subj /CN=LoopKit-Test-CA -days 2
        issue() {  # name cn san
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key -out $1.csr -subj /CN=$2
            printf "subjectAltName=$3\\n" > $1.ext
            openssl x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $1.pem -days 2 -extfile $1.ext
        }
        issue server localhost DNS:localhost,IP:127.0.0.1
        issue renewed localhost-renewed DNS:localhost,IP:127.0.0.1
        issue wronghost elsewhere.example DNS:elsewhere.example
        issue client loopkit-client DNS:client.example
        # One that expired in 2020 (`openssl ca` is the command that takes explicit dates).
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout expired.key -out expired.csr -subj /CN=localhost
        printf "[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n" > ca.cnf
        touch index.txt; echo 01 > serial
        openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem -notext \
            -startdate 20200101000000Z -enddate 20200102000000Z -extfile server.ext
        """
        let status = try! ChildProcess("/bin/sh", ["-c", script], output: .null).waitUntilExit()
        precondition(status == 0, "openssl could not make the test certificates")
        return TestCertificates(folder: folder)
    }()

    /// A server context presenting the `localhost` certificate.
    func serverContext(_ adjust: (inout TLSConfiguration) -> Void = { _ in }) throws -> TLSContext {
        var configuration = TLSConfiguration.server(certificateChain: .file(serverPEM), privateKey: .file(serverKey))
        adjust(&configuration)
        return try TLSContext(configuration)
    }

    /// A client context trusting the test CA.
    func clientContext(_ adjust: (inout TLSConfiguration) -> Void = { _ in }) throws -> TLSContext {
        var configuration = TLSConfiguration.client(trustRoots: .certificates(.file(caPEM)))
        adjust(&configuration)
        return try TLSContext(configuration)
    }
}

/// Runs a command to its end; returns its exit status and standard output (standard error is dropped).
/// With `posix_spawn` and `waitpid`, not Foundation's `Process`, whose wait runs a run loop.
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
    var toChild: [Int32] = [-1, -1]
    var fromChild: [Int32] = [-1, -1]
    guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { throw NetError.system("pipe", errno) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
    posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    for fd in toChild + fromChild { posix_spawn_file_actions_addclose(&actions, fd) }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = spawn(&pid, executable, actions: &actions, argv: argv)
    Glibc.close(toChild[0])
    Glibc.close(fromChild[1])
    guard spawned == 0 else {
        Glibc.close(toChild[1])
        Glibc.close(fromChild[0])
        throw NetError.system("posix_spawn", spawned)
    }
    if let input {
        _ = input.withUnsafeBytes { Glibc.write(toChild[1], $0.baseAddress, $0.count) }
    }
    Glibc.close(toChild[1])
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { Glibc.read(fromChild[0], $0.baseAddress, $0.count) }
        if count <= 0 { break }
        output += chunk[..<count]
    }
    Glibc.close(fromChild[0])
    var status: Int32 = 0
    _ = waitpid(pid, &status, 0)
    let exited = status & 0x7F == 0
    return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), String(decoding: output, as: UTF8.self))
}

/// `posix_spawn` with an empty signal mask. Tests run on Dispatch worker threads, which block every
/// signal, and a child inherits its parent thread's mask: without this, a server started here would
/// never see the SIGTERM that ends it.
func spawn(_ pid: inout pid_t, _ executable: String, actions: inout posix_spawn_file_actions_t,
           argv: [UnsafeMutablePointer<CChar>?]) -> Int32 {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    return posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
}

/// A suite that runs a TLS echo server (answers each line with `echo: LINE`, then closes) and talks to it.
protocol TLSEchoSuite {
    var certificates: TestCertificates { get }
}

extension TLSEchoSuite {
    /// A one-loop TLS listener that answers each line with `echo: LINE` and closes; records how each
    /// connection ended and what its handshake agreed on.
    func withServer(
        _ context: TLSContext,
        _ body: (EventLoop, SocketAddress, Recorder<CloseReason>, Recorder<TLSConnectionInfo>, TCPListener) async throws -> Void
    ) async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        var options = ListenerOptions()
        options.tls = context
        let reasons = Recorder<CloseReason>()
        let infos = Recorder<TLSConnectionInfo>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options, onAccept: { connection in
            if let info = connection.tlsInfo { infos.record(info) }
            connection.onClose { reasons.record($0) }
            connection.onRead { bytes in
                guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return 0 }
                do {
                    try connection.write("echo: " + String(decoding: bytes[..<newline], as: UTF8.self) + "\n")
                } catch {
                    return bytes.count
                }
                connection.close()
                return newline + 1
            }
        })
        try await body(group.loops[0], listener.localAddress, reasons, infos, listener)
        await listener.shutdown()
    }

    /// Connects with `client`, sends a line, returns the answer.
    func exchange(_ line: String, at address: SocketAddress, on loop: EventLoop, client: TLSContext,
                  serverName: String? = "localhost") async throws -> String {
        try await onLoop(loop) {
            let connection = try await Connection.connect(to: address, on: loop, tls: client, serverName: serverName)
            try await connection.send(line + "\n")
            return String(decoding: try await readToEnd(from: connection), as: UTF8.self)
        }
    }
}
