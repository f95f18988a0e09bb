import HTTPTypes
import LoopKit
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing
@testable import LoopKitHTTP

/// The deadlines on what a client must take: output that makes no progress for `writeTimeout` and a close
/// that cannot drain within `closeTimeout` end the connection with a reset, whatever the state (a
/// streamed response, a kept-alive connection, a closing one).
@Suite("Write and close deadlines")
struct DeadlineTests {
    /// One in-memory connection to routes on a stepped loop, whose client end reads nothing.
    final class SilentClient {
        let driver: LoopDriver
        let host: HTTPConnectionHost
        let pair: InMemoryConnectionPair
        let cuts = Recorder<HTTPServer.Configuration.Deadline>()
        var closeReason: CloseReason?

        /// - Parameter overTLS: The pair speaks TLS (the server presents the test certificate).
        init(router: HTTPRouter, overTLS: Bool = false, _ configure: (inout HTTPServer.Configuration) -> Void) throws {
            driver = try LoopDriver()
            var configuration = HTTPServer.Configuration()
            configure(&configuration)
            let cuts = cuts
            configuration.connectionCut = { deadline in cuts.record(deadline) }
            host = try HTTPConnectionHost(loop: driver.loop, configuration: configuration, router: router, logger: quietLogger)
            if overTLS {
                let certificates = HTTPSCertificates.shared
                pair = try InMemoryConnectionPair(
                    driver: driver,
                    serverTLS: try TLSContext(.server(certificateChain: .file(certificates.serverPEM), privateKey: .file(certificates.serverKey))),
                    clientTLS: try TLSContext(.client(trustRoots: .certificates(.file(certificates.caPEM)))))
            } else {
                pair = try InMemoryConnectionPair(driver: driver, options: ConnectionOptions())
            }
            pair.client.onRead { bytes in bytes.count }  // when it reads, it takes everything
            pair.client.pauseReading()
            pair.client.onClose { [unowned self] reason in closeReason = reason }
            host.serve(pair.server)
        }

        func send(_ text: String) throws {
            try pair.client.write(text)
            try driver.runUntilIdle()
        }
    }

    /// A route whose body is far more than a client's buffers hold.
    static func bigRoutes() -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/stream") { _ in
            HTTPServerResponse(status: .ok, body: .stream { writer in
                let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)
                for _ in 0..<65_536 { try await writer.write(chunk) }  // 1 GiB
            })
        }
        router.get("/big") { _ in HTTPServerResponse(status: .ok, body: .bytes([UInt8](repeating: UInt8(ascii: "y"), count: 4 * 1024 * 1024))) }
        return router
    }

    @Test func theDefaultsBoundWhatAClientThatStopsReadingHolds() {
        let configuration = HTTPServer.Configuration()
        #expect(configuration.writeTimeout == .seconds(30))
        #expect(configuration.closeTimeout == .seconds(10))
    }

    @Test(arguments: [false, true])
    func aStreamedResponseTheClientNeverReadsIsCutAtTheWriteDeadline(overTLS: Bool) throws {
        let client = try SilentClient(router: Self.bigRoutes(), overTLS: overTLS) { _ in }
        try client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(client.pair.server.bufferedOutputCount > 0)  // the writer waits for the client
        try client.driver.advance(by: .seconds(29))
        #expect(client.host.connectionCount == 1)
        try client.driver.advance(by: .seconds(2))
        #expect(client.host.connectionCount == 0)
        #expect(client.cuts.all == [.writeProgress])
        #expect(client.pair.server.closeReason == .aborted)  // reset, its output dropped
        try client.driver.runUntilIdle()
        #expect(client.closeReason != nil)
    }

    @Test func outputThatStillMovesIsNotCut() throws {
        let client = try SilentClient(router: Self.bigRoutes()) { $0.writeTimeout = .seconds(5) }
        try client.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
        // The client takes a little every 4 s: slow, but progress; 60 s of it do not end the connection.
        for _ in 0..<15 {
            try client.driver.advance(by: .seconds(4))
            let sent = client.pair.server.bytesSent
            client.pair.client.resumeReading()
            try client.driver.step(4)
            client.pair.client.pauseReading()
            try client.driver.runUntilIdle()
            #expect(client.pair.server.bytesSent > sent)
        }
        #expect(client.host.connectionCount == 1)
        #expect(client.cuts.all.isEmpty)
    }

    @Test(arguments: [false, true])
    func aCloseThatCannotDrainIsCutAtTheCloseDeadline(overTLS: Bool) throws {
        let client = try SilentClient(router: Self.bigRoutes(), overTLS: overTLS) { $0.writeTimeout = .seconds(3_600) }
        // Connection: close, and 4 MiB the client never reads: the server closes after the response and
        // waits for its output to drain.
        try client.send("GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(client.pair.server.isClosing)
        try client.driver.advance(by: .seconds(9))
        #expect(client.host.connectionCount == 1)
        try client.driver.advance(by: .seconds(2))
        #expect(client.host.connectionCount == 0)
        #expect(client.cuts.all == [.closeDrain])
        #expect(client.pair.server.closeReason == .aborted)
    }

    @Test func aClientThatNeverReadsAStreamLosesItsSocketOverTheWire() async throws {
        let cuts = Recorder<HTTPServer.Configuration.Deadline>()
        try await withServer(configure: {
            $0.writeTimeout = .milliseconds(200)
            $0.connectionCut = { deadline in cuts.record(deadline) }
        }) { server, port in
            let client = try RawClient(port: port)
            client.send("GET /stream?bytes=1000000000 HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
            #expect(cuts.all == [.writeProgress])
            #expect(serverSocketCount(port: port) == 1)  // the listener alone: the descriptor is closed
            _ = client.readUntilClosed()  // the reset ends the client's reads too
        }
    }
}
