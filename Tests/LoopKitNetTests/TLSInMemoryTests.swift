import LoopKit
import LoopKitNet
import LoopKitTLS
import LoopKitNetTesting
import LoopKitTesting
import Testing

/// TLS over the in-memory pair: OpenSSL's handshake, records and alerts over memory transports, on a
/// stepped loop, with no socket.
@Suite("TLS in memory")
struct TLSInMemoryTests {
    let certificates = TestCertificates.shared

    @Test func theHandshakeRunsOverMemoryAndAgreesOnTLS13AndALPN() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(
            driver: driver,
            serverTLS: try certificates.serverContext { $0.applicationProtocols = ["http/1.1"] },
            clientTLS: try certificates.clientContext { $0.applicationProtocols = ["h2", "http/1.1"] })
        #expect(pair.client.tlsInfo?.version == "TLSv1.3")
        #expect(pair.server.tlsInfo?.version == "TLSv1.3")
        #expect(pair.client.applicationProtocol == "http/1.1")
        #expect(pair.server.applicationProtocol == "http/1.1")
        #expect(pair.client.remoteAddress == nil)  // no socket beneath
    }

    @Test func anEchoRunsOneStepAtATimeThroughRecords() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver, serverTLS: try certificates.serverContext(),
                                              clientTLS: try certificates.clientContext())
        echoByCallbacks(pair.server)
        let received = Recorder<[UInt8]>()
        pair.client.onRead { bytes in
            received.record(Array(bytes))
            return bytes.count
        }
        try pair.client.write("ping")
        #expect(pair.client.tlsRecordsWritten == 1)
        try driver.step()  // the server decrypts and its read callback echoes
        #expect(received.all.isEmpty)
        try driver.step()  // the client decrypts the echo
        #expect(received.all == [Array("ping".utf8)])
    }

    @Test func aClientThatDoesNotVerifyTheNameIsRefusedWithOpenSSLsVerdict() throws {
        let driver = try LoopDriver()
        #expect {
            _ = try InMemoryConnectionPair(driver: driver, serverTLS: try certificates.serverContext(),
                                           clientTLS: try certificates.clientContext(), serverName: "elsewhere.example")
        } throws: { error in
            guard case NetError.tls(let reason) = error else { return false }
            return reason.contains("certificate verify failed")
        }
    }

    @Test func aGracefulCloseDeliversTheLastRecordThenACleanEnd() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver, serverTLS: try certificates.serverContext(),
                                              clientTLS: try certificates.clientContext())
        let reasons = Recorder<CloseReason>()
        let received = Recorder<String>()
        pair.server.onRead { bytes in
            received.record(String(decoding: bytes, as: UTF8.self))
            return bytes.count
        }
        pair.server.onClose { reasons.record($0) }
        try pair.client.write("last words")
        pair.client.close()
        try driver.runUntilIdle()
        #expect(pair.client.closeReason == .closedLocally)
        #expect(received.all.joined() == "last words")
        #expect(reasons.all == [.peerClosed])
    }

    @Test func aReaderThatStopsHoldsTheWriterAtTheHighWaterMarkThroughTLS() throws {
        let driver = try LoopDriver()
        var options = ConnectionOptions()
        options.readHighWaterMark = 16 * 1024
        let pair = try InMemoryConnectionPair(driver: driver, options: options, serverTLS: try certificates.serverContext(),
                                              clientTLS: try certificates.clientContext())
        pair.server.onRead { _ in 0 }  // never consumes
        try pair.client.write(Bytes(Array(repeating: 7, count: 1024 * 1024)))
        try driver.runUntilIdle()
        #expect(pair.server.bufferedInputCount <= 16 * 1024)
        #expect(pair.client.bufferedOutputCount > 900 * 1024)  // the rest waits in the writer
        #expect(!pair.client.isClosed)
    }
}
