import HTTPTypes
import LoopKit
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing
@testable import LoopKitHTTP

/// An upgrade hands the connection over: the WebSocket becomes the TCP connection's one handler, is given
/// the bytes the client sent right after its request, and the HTTP connection is released.
@Suite("Upgrade hand-over")
struct UpgradeHandOverTests {
    static let upgradeRequest = "GET /ws/echo HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

    /// A host serving the WebSocket routes on a stepped loop, and a client end that keeps what it receives.
    final class Harness {
        let driver: LoopDriver
        let host: HTTPConnectionHost
        let pair: InMemoryConnectionPair
        var received: [UInt8] = []

        init() throws {
            driver = try LoopDriver()
            host = try HTTPConnectionHost(loop: driver.loop, configuration: HTTPServer.Configuration(),
                                          router: webSocketTestRouter(), logger: quietLogger)
            pair = try InMemoryConnectionPair(driver: driver)
            pair.client.onRead { [unowned self] bytes in
                received.append(contentsOf: bytes)
                return bytes.count
            }
            host.serve(pair.server)
        }

        /// The frames after the `101` head.
        func framesAfterHead() throws -> [WebSocketFrame] {
            let text = String(decoding: received, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { return [] }
            var bytes = Array(received[text.utf8.distance(from: text.startIndex, to: end.upperBound)...])
            var parser = WebSocketFrameParser(maxFrameSize: 1 << 20, requiresMask: false, allowsRSV1: false)
            var frames: [WebSocketFrame] = []
            while !bytes.isEmpty {
                let (event, consumed) = try bytes.withUnsafeBytes { try parser.parse($0) }
                guard consumed > 0 else { break }
                bytes.removeFirst(consumed)
                if case .frame(let frame) = event { frames.append(frame) }
            }
            return frames
        }
    }

    @Test func theHTTPConnectionIsReleasedAtTheUpgrade() throws {
        let harness = try Harness()
        weak let http = harness.host.handlers.first as? HTTPConnection
        #expect(http != nil)
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        #expect(String(decoding: harness.received, as: UTF8.self).hasPrefix("HTTP/1.1 101"))
        #expect(http == nil)
        #expect(harness.host.connectionCount == 1)  // the same connection, served by the WebSocket now
        #expect(harness.host.handlers.first is WebSocketCore)
    }

    @Test func bytesSentRightAfterTheRequestGoToTheWebSocket() throws {
        let harness = try Harness()
        let frame = WebSocketFrameEncoder.encode(WebSocketFrame(fin: true, opcode: .text, payload: Array("early".utf8)),
                                                 maskKey: [1, 2, 3, 4])
        try harness.pair.client.write(Bytes(Array(Self.upgradeRequest.utf8) + frame))  // one write: read together
        try harness.driver.runUntilIdle()
        let frames = try harness.framesAfterHead()
        #expect(frames.map(\.opcode) == [.text])
        #expect(frames.first?.payload == Array("early".utf8))
    }

    @Test func anUpgradedConnectionIsCountedUntilItClosesAndThenRemoved() throws {
        let harness = try Harness()
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        #expect(harness.host.connectionCount == 1)
        harness.pair.client.close()
        try harness.driver.runUntilIdle()
        #expect(harness.host.connectionCount == 0)
    }

    @Test func aGracefulShutdownClosesAnUpgradedConnectionWith1001() throws {
        let harness = try Harness()
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        let finished = Recorder<Bool>()
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(true) }
        try harness.driver.runUntilIdle()
        let close = try harness.framesAfterHead().last
        #expect(close?.opcode == .close)
        #expect(close.map { UInt16($0.payload[0]) << 8 | UInt16($0.payload[1]) } == 1001)
    }

    @Test func aCloseHandlerAddedAfterTheEndRunsInTheNextIterationForTCPAndWebSocketAlike() throws {
        let driver = try LoopDriver()
        let sockets = Recorder<WebSocket>()
        var router = HTTPRouter()
        router.webSocket("/ws") { _, socket in sockets.record(socket) }
        let host = try HTTPConnectionHost(loop: driver.loop, configuration: HTTPServer.Configuration(), router: router, logger: quietLogger)
        let pair = try InMemoryConnectionPair(driver: driver)
        host.serve(pair.server)
        try pair.client.write(Self.upgradeRequest.replacingOccurrences(of: "/ws/echo", with: "/ws"))
        try driver.runUntilIdle()
        let socket = try #require(sockets.all.first)
        pair.client.abort()
        try driver.runUntilIdle()
        let ran = Recorder<String>()
        socket.onClose { _ in ran.record("websocket") }
        pair.server.onClose { _ in ran.record("tcp") }
        #expect(ran.all.isEmpty)  // neither at once
        try driver.step()
        #expect(ran.all == ["websocket", "tcp"])
    }
}
