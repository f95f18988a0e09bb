import Foundation
import LoopKit
import LoopKitNet
import LoopKitTLS
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Bad TLS input ends that one connection with a typed reason, never the server: raw bytes and truncated
/// handshakes from Python's `ssl` module, a client that stalls, an expired certificate, renegotiation.
/// After each, the listener has no connection left and a good client is still answered.
@Suite("TLS bad input: each ends one connection with a typed reason, never the server")
struct TLSBadInputTests: TLSEchoSuite {
    let certificates = TestCertificates.shared

    /// Records each failed handshake's reason.
    func failures(of listener: TCPListener) -> Recorder<NetError> {
        let failures = Recorder<NetError>()
        listener.onFailedHandshake { failures.record($0) }
        return failures
    }

    /// The server still answers a good client, and holds no connection.
    func expectServerStillAnswers(_ address: SocketAddress, on loop: EventLoop, _ listener: TCPListener) async throws {
        #expect(try await exchange("after", at: address, on: loop, client: try certificates.clientContext()) == "echo: after\n")
        #expect(await eventually { listener.connectionCount == 0 })
    }

    @Test func garbageInsteadOfAClientHelloIsAFailedHandshake() async throws {
        try await withServer(try certificates.serverContext()) { loop, address, reasons, _, listener in
            let failed = failures(of: listener)
            let result = try await run("/usr/bin/python3", ["-c", Python.rawBytes, "\(address.port)", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"])
            #expect(result.status == 0)
            #expect(!result.output.contains("HTTP"))  // an alert at most, never an answer
            #expect(await eventually { failed.all.count == 1 })
            #expect(failed.all.allSatisfy { if case .tls(let text) = $0 { text.contains("http request") } else { false } }, "\(failed.all)")
            #expect(reasons.all.isEmpty)  // the handler never saw it
            try await expectServerStillAnswers(address, on: loop, listener)
            #expect(listener.failedHandshakeCount == 1)
        }
    }

    @Test func aTruncatedClientHelloIsAFailedHandshake() async throws {
        try await withServer(try certificates.serverContext()) { loop, address, reasons, _, listener in
            let failed = failures(of: listener)
            // Half of a real ClientHello (made by Python's ssl), then the end of the stream.
            let result = try await run("/usr/bin/python3", ["-c", Python.truncatedHello, "\(address.port)"])
            #expect(result.status == 0)
            #expect(result.output.hasPrefix("sent "))
            #expect(await eventually { failed.all.count == 1 })
            #expect(failed.all.first == .connectionClosed(.peerClosed) || failed.all.first.map { if case .tls = $0 { true } else { false } } == true)
            #expect(reasons.all.isEmpty)
            try await expectServerStillAnswers(address, on: loop, listener)
        }
    }

    @Test func aClientThatStallsMidHandshakeTimesOut() async throws {
        try await withServer(try certificates.serverContext { $0.handshakeTimeout = .milliseconds(100) }) { loop, address, reasons, _, listener in
            let failed = failures(of: listener)
            let raw = try RawSocket(port: address.port)
            raw.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])  // the first bytes of a ClientHello, then nothing
            #expect(raw.readUntilClosed().isEmpty)  // the server closed it: the timeout, 20 s before recv's own
            raw.close()
            #expect(await eventually { failed.all.count == 1 })
            #expect(failed.all.first.map { if case .tls(let text) = $0 { text.contains("did not finish") } else { false } } == true)
            #expect(reasons.all.isEmpty)
            try await expectServerStillAnswers(address, on: loop, listener)
        }
    }

    @Test func theClientRefusesAnExpiredCertificate() async throws {
        let server = try TLSContext(.server(certificateChain: .file(certificates.expiredPEM), privateKey: .file(certificates.expiredKey)))
        try await withServer(server) { loop, address, _, _, listener in
            await #expect {
                _ = try await exchange("x", at: address, on: loop, client: try certificates.clientContext())
            } throws: { error in
                guard case NetError.tls(let reason) = error else { return false }
                return reason.contains("certificate verify failed") && reason.contains("expired")
            }
            #expect(await eventually { listener.connectionCount == 0 })
            // The server saw the client's alert: a failed handshake, counted.
            #expect(await eventually { listener.failedHandshakeCount == 1 })
        }
    }

    @Test func aRenegotiationAttemptEndsThatConnectionOnly() async throws {
        try await withServer(try certificates.serverContext()) { loop, address, reasons, _, listener in
            // s_client asks for a renegotiation on a line "R" (TLS 1.2: TLS 1.3 has none); the server
            // refuses it (OpenSSL's SSL_OP_NO_RENEGOTIATION, a no_renegotiation alert), s_client gives
            // up with a handshake_failure alert, and the server's connection ends with that reason.
            let result = try await run("/usr/bin/openssl", ["s_client", "-connect", "\(address)", "-tls1_2", "-CAfile", certificates.caPEM],
                                 input: Data("R\n".utf8))
            #expect(!result.output.contains("echo"))
            #expect(await eventually { reasons.all.count == 1 })
            #expect(reasons.all.allSatisfy { if case .tls(let text) = $0 { text.contains("alert handshake failure") } else { false } }, "\(reasons.all)")
            try await expectServerStillAnswers(address, on: loop, listener)
        }
    }

    @Test func manyBadHandshakesLeakNoDescriptor() async throws {
        try await withServer(try certificates.serverContext()) { loop, address, _, _, listener in
            try await expectServerStillAnswers(address, on: loop, listener)
            let before = openDescriptors(onPort: address.port)
            let result = try await run("/usr/bin/python3", ["-c", Python.manyBadHandshakes, "\(address.port)", "200"])
            #expect(result.output == "done 200\n")
            #expect(await eventually { listener.failedHandshakeCount == 400 })
            #expect(await eventually { listener.connectionCount == 0 })
            #expect(await eventually { openDescriptors(onPort: address.port) <= before })
            try await expectServerStillAnswers(address, on: loop, listener)
        }
    }
}

/// The Python clients (standard library only: `socket`, `ssl`).
private enum Python {
    /// Sends argv[2] to port argv[1], reads until the server closes, prints what came back.
    static let rawBytes = """
    import socket, sys
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
    s.sendall(sys.argv[2].encode())
    data = b""
    while True:
        try:
            chunk = s.recv(4096)
        except ConnectionResetError:
            break
        if not chunk: break
        data += chunk
    print(data.decode("latin-1"), end="")
    """

    /// A real ClientHello from Python's ssl (a memory BIO), half of it sent, then the write side shut.
    static let truncatedHello = """
    import socket, ssl, sys
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
    s.sendall(hello[: len(hello) // 2])
    s.shutdown(socket.SHUT_WR)
    while s.recv(4096): pass
    print("sent", len(hello) // 2, "of", len(hello))
    """

    /// argv[2] rounds of two bad handshakes each: random bytes, and half a ClientHello then a reset.
    static let manyBadHandshakes = """
    import os, socket, ssl, struct, sys
    port, rounds = int(sys.argv[1]), int(sys.argv[2])
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    for _ in range(rounds):
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(b"G" + os.urandom(511))  # not 0x16: no record header that asks to wait for more
        while True:
            try:
                if not s.recv(4096): break
            except ConnectionResetError:
                break
        s.close()
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello = outgoing.read()
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(hello[: len(hello) // 2])
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset mid-handshake
    print("done", rounds)
    """
}
