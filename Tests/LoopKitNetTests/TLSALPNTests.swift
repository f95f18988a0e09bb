import Foundation
import LoopKit
import LoopKitNet
import LoopKitTLS
import Testing

/// ALPN (RFC 7301): the server's choice seen on both sides, the no_application_protocol refusal, no ALPN
/// when either side has none, protocols of one context's own, names checked, and `openssl s_client`.
@Suite("TLS ALPN: the server's choice on both sides, refusal, none, per-context protocols, real peers")
struct TLSALPNTests: TLSEchoSuite {
    let certificates = TestCertificates.shared

    /// Connects with `client`, reads the agreed protocol, exchanges a line; returns both.
    func negotiate(at address: SocketAddress, on loop: EventLoop, client: TLSContext) async throws -> (protocol: String?, answer: String) {
        try await onLoop(loop) {
            let connection = try await Connection.connect(to: address, on: loop, tls: client, serverName: "localhost")
            let chosen = connection.applicationProtocol
            try await connection.send("alpn\n")
            return (chosen, String(decoding: try await readToEnd(from: connection), as: UTF8.self))
        }
    }

    @Test func bothSidesSeeTheServersFirstProtocolThatTheClientOffers() async throws {
        try await withServer(try certificates.serverContext { $0.applicationProtocols = ["h2", "http/1.1"] }) { loop, address, _, infos, _ in
            let client = try certificates.clientContext { $0.applicationProtocols = ["http/1.1", "h2"] }
            let (chosen, answer) = try await negotiate(at: address, on: loop, client: client)
            #expect(answer == "echo: alpn\n")
            #expect(chosen == "h2")  // the server's preference, not the client's
            #expect(infos.all.map(\.applicationProtocol) == ["h2"])
        }
    }

    @Test func aClientOfferingOnlyProtocolsTheServerDoesNotSpeakIsRefusedWithNoApplicationProtocol() async throws {
        try await withServer(try certificates.serverContext { $0.applicationProtocols = ["http/1.1"] }) { loop, address, _, infos, listener in
            let client = try certificates.clientContext { $0.applicationProtocols = ["h2", "spdy/3"] }
            await #expect {
                _ = try await negotiate(at: address, on: loop, client: client)
            } throws: { error in
                guard case NetError.tls(let reason) = error else { return false }
                return reason.contains("no application protocol")
            }
            #expect(await eventually { listener.failedHandshakeCount == 1 })
            #expect(infos.all.isEmpty)  // the handler never saw it
        }
    }

    @Test func withoutALPNOnEitherSideTheHandshakeGoesOnWithNoProtocol() async throws {
        // The client offers none: the server's list does not matter.
        try await withServer(try certificates.serverContext { $0.applicationProtocols = ["http/1.1"] }) { loop, address, _, infos, _ in
            let (chosen, answer) = try await negotiate(at: address, on: loop, client: try certificates.clientContext())
            #expect(answer == "echo: alpn\n")
            #expect(chosen == nil)
            #expect(infos.all.count == 1 && infos.all[0].applicationProtocol == nil)
        }
        // The server speaks none: the client's offer is ignored, not refused.
        try await withServer(try certificates.serverContext()) { loop, address, _, infos, _ in
            let client = try certificates.clientContext { $0.applicationProtocols = ["h2"] }
            let (chosen, answer) = try await negotiate(at: address, on: loop, client: client)
            #expect(answer == "echo: alpn\n")
            #expect(chosen == nil)
            #expect(infos.all.count == 1 && infos.all[0].applicationProtocol == nil)
        }
    }

    @Test func aContextWithProtocolsOfItsOwnUsesThemAndSharesReloads() async throws {
        let server = try certificates.serverContext()
        let http = try server.withApplicationProtocols(["http/1.1"])
        #expect(server.applicationProtocols.isEmpty && http.applicationProtocols == ["http/1.1"])
        #expect(http != server && http.role == .server)
        try await withServer(http) { loop, address, _, infos, _ in
            let client = try certificates.clientContext()
            let offering = try client.withApplicationProtocols(["h2", "http/1.1"])
            #expect(try await negotiate(at: address, on: loop, client: offering).protocol == "http/1.1")
            #expect(try await negotiate(at: address, on: loop, client: client).protocol == nil)  // its origin offers none
            // A reload of the origin is one of both: the renewed certificate, the same protocols.
            try server.reload(.server(certificateChain: .file(certificates.renewedPEM), privateKey: .file(certificates.renewedKey)))
            #expect(try await negotiate(at: address, on: loop, client: offering).protocol == "http/1.1")
            #expect(await eventually { infos.all.count == 3 })
            #expect(infos.all.map { $0.peerSubject == nil } == [true, true, true])  // no client certificates asked
            #expect(http.applicationProtocols == ["http/1.1"])
            let subject = try await onLoop(loop) {
                let connection = try await Connection.connect(to: address, on: loop, tls: offering, serverName: "localhost")
                defer { connection.abort() }
                return connection.tlsInfo?.peerSubject
            }
            #expect(subject?.hasSuffix("CN=localhost-renewed") == true)
        }
    }

    @Test func protocolNamesOutsideOneTo255BytesAreRefused() throws {
        #expect {
            _ = try certificates.serverContext { $0.applicationProtocols = ["http/1.1", ""] }
        } throws: { error in
            guard case NetError.tls(let reason) = error else { return false }
            return reason.contains("1 to 255 bytes")
        }
        #expect(throws: NetError.self) {
            _ = try certificates.clientContext().withApplicationProtocols([String(repeating: "a", count: 256)])
        }
        #expect(try certificates.clientContext().withApplicationProtocols([String(repeating: "a", count: 255)])
            .applicationProtocols.first?.utf8.count == 255)
    }

    @Test func opensslsClientIsAnsweredWithTheProtocolItOffersAndRefusedWithoutOneInCommon() async throws {
        try await withServer(try certificates.serverContext { $0.applicationProtocols = ["http/1.1"] }) { _, address, _, _, listener in
            let accepted = try await run("/usr/bin/openssl", ["s_client", "-connect", "\(address)", "-servername", "localhost",
                                                        "-CAfile", certificates.caPEM, "-verify_return_error", "-alpn", "h2,http/1.1"],
                                   input: Data())
            #expect(accepted.status == 0)
            #expect(accepted.output.contains("ALPN protocol: http/1.1"))
            let refused = try await run("/usr/bin/openssl", ["s_client", "-connect", "\(address)", "-servername", "localhost",
                                                       "-CAfile", certificates.caPEM, "-alpn", "h2"], input: Data())
            #expect(refused.status != 0)
            #expect(!refused.output.contains("ALPN protocol:"))
            #expect(await eventually { listener.failedHandshakeCount == 1 })
        }
    }
}
