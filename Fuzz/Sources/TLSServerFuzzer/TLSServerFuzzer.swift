#if canImport(Glibc)
import Glibc
#endif
import FuzzSupport
import LoopKit
@testable import LoopKitNet
import LoopKitTLS
import LoopKitTesting

/// The TLS server fed raw bytes: a server end of an in-memory pair speaks TLS (OpenSSL over LoopKit's
/// memory BIO, as in production over a socket), its client end writes the input as it is, in the pieces the
/// input's hash picks, and then leaves. Whatever the bytes, the server's handshake is told its outcome
/// exactly once, the connection ends, and nothing crashes or leaks (AddressSanitizer's leak check).
///
/// The certificate is made once per process with the `openssl` command, in a temporary folder.
@_cdecl("LLVMFuzzerTestOneInput")
public func tlsServerFuzzer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let driver = try! LoopDriver()
    var outcomes = 0
    let (client, server) = try! Connection.makeInMemoryPair(
        on: driver.loop, options: ConnectionOptions(),
        security: InMemorySecurity(server: serverContext, client: nil, serverName: "localhost"),
        handshaken: { _ in outcomes += 1 })
    server.onRead { $0.count }  // a server that takes whatever it decrypts
    client.onRead { $0.count }
    var random = SplitMix(hashing: input)
    var offset = 0
    while offset < size, !client.isClosed {
        let piece = min(size - offset, 1 + Int(random.next() % 600))
        do {
            try client.write(copying: UnsafeRawBufferPointer(rebasing: input[offset..<(offset + piece)]))
        } catch {
            break  // the server ended the connection: the client end refuses writes
        }
        offset += piece
        _ = try! driver.step()
    }
    try! driver.runUntilIdle()
    client.close()
    try! driver.runUntilIdle()
    fuzzCheck(server.isClosed, "the server end outlived its client")
    fuzzCheck(outcomes == 1, "the handshake's outcome was told \(outcomes) times")
    return 0
}

/// A server context for `localhost`, its key and certificate made by `openssl` on first use.
let serverContext: TLSContext = {
    let folder = "/tmp/loopkit-tls-fuzz-\(getpid())"
    let command = "mkdir -p \(folder) && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        + "-keyout \(folder)/key.pem -out \(folder)/cert.pem -subj /CN=localhost -days 2 2>/dev/null"
    precondition(system(command) == 0, "openssl could not make the fuzzer's certificate")
    return try! TLSContext(.server(certificateChain: .file("\(folder)/cert.pem"), privateKey: .file("\(folder)/key.pem")))
}()
