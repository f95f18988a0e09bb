import LoopKit
import LoopKitNetTesting
import LoopKitTesting
import Testing
@testable import LoopKitHTTP
@testable import LoopKitNet

/// A served WebSocket's keep-alive ping, ping timeout and close-handshake timeout are deadlines the
/// server's one sweep per loop checks (the socket keeps no timer of its own); the sweep ticks every
/// quarter of the shortest deadline of the server and its WebSocket routes. On virtual time, in memory.
@Suite("WebSocket deadlines on the server's sweep")
struct WebSocketSweepTests {
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    /// A host on a stepped loop with a pinging route (ping every 1 s, pong within 2 s, close within 3 s:
    /// a sweep tick every 250 ms) and a route that closes at once, and a client end that keeps what it
    /// receives after the `101`.
    final class Harness {
        let driver: LoopDriver
        let host: HTTPConnectionHost
        let pair: InMemoryConnectionPair
        let errors = Recorder<String>()
        var received: [UInt8] = []

        init(path: String) throws {
            var configuration = WebSocketConfiguration()
            configuration.pingInterval = .seconds(1)
            configuration.pingTimeout = .seconds(2)
            configuration.closeTimeout = .seconds(3)
            var router = HTTPRouter()
            router.webSocket("/ping", configuration: configuration) { [errors] _, socket in
                socket.onClose { error in errors.record(error.map { "\($0)" } ?? "clean") }
            }
            router.webSocket("/close", configuration: configuration) { [errors] _, socket in
                socket.onClose { error in errors.record(error.map { "\($0)" } ?? "clean") }
                socket.close(code: .normalClosure)
            }
            driver = try LoopDriver()
            host = try HTTPConnectionHost(loop: driver.loop, configuration: HTTPServer.Configuration(), router: router,
                                          logger: quietLogger)
            pair = try InMemoryConnectionPair(driver: driver)
            pair.client.onRead { [unowned self] bytes in
                received.append(contentsOf: bytes)
                return bytes.count
            }
            host.serve(pair.server)
            try pair.client.write("GET \(path) HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                  + "Sec-WebSocket-Key: \(WebSocketSweepTests.key)\r\nSec-WebSocket-Version: 13\r\n\r\n")
            try driver.runUntilIdle()
            let text = String(decoding: received, as: UTF8.self)
            precondition(text.hasPrefix("HTTP/1.1 101 "), "not upgraded: \(text)")
            let end = text.range(of: "\r\n\r\n")!
            received = Array(received[text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound)...])
        }

        /// The server's frames received since the last call (unmasked, so their bytes as they are).
        func takeFrames() -> [UInt8] {
            defer { received = [] }
            return received
        }

        /// Sends a masked pong with no payload.
        func pong() throws {
            try pair.client.write(Bytes([0x8A, 0x80, 1, 2, 3, 4]))
            try driver.runUntilIdle()
        }
    }

    @Test func theKeepAlivePingGoesOutAtTheSweepAndTheSocketKeepsNoTimer() throws {
        let harness = try Harness(path: "/ping")
        #expect(harness.driver.loop.liveTimerCount == 1)  // the registry's sweep, for the socket too
        try harness.driver.advance(by: .milliseconds(999))
        #expect(harness.takeFrames().isEmpty)
        try harness.driver.advance(by: .milliseconds(1))
        #expect(harness.takeFrames() == [0x89, 0x00])  // a ping, at the tick where it fell due
        try harness.pong()
        try harness.driver.advance(by: .seconds(1))
        #expect(harness.takeFrames() == [0x89, 0x00])  // the next, one interval later
        #expect(harness.driver.loop.liveTimerCount == 1)
    }

    @Test func answeredPingsKeepTheSocketOpen() throws {
        let harness = try Harness(path: "/ping")
        for _ in 0..<10 {
            try harness.driver.advance(by: .seconds(1))
            #expect(harness.takeFrames() == [0x89, 0x00])
            try harness.pong()
        }
        #expect(!harness.pair.server.isClosed)
        #expect(harness.errors.all.isEmpty)
    }

    @Test func anUnansweredPingClosesWith1001AtThePingTimeout() throws {
        let harness = try Harness(path: "/ping")
        try harness.driver.advance(by: .seconds(1))
        #expect(harness.takeFrames() == [0x89, 0x00])
        try harness.driver.advance(by: .milliseconds(1_999))
        #expect(harness.takeFrames().isEmpty)  // no second ping while the first waits for its pong
        #expect(!harness.pair.server.isClosed)
        try harness.driver.advance(by: .milliseconds(1))
        #expect(harness.takeFrames() == [0x88, 0x0E, 0x03, 0xE9] + Array("ping timeout".utf8))
        try harness.driver.runUntilIdle()
        #expect(harness.pair.server.isClosed)
        #expect(harness.errors.all == ["\(WebSocketError.pingTimeout)"])
    }

    @Test func aCloseHandshakeThePeerNeverAnswersIsDroppedAtTheCloseTimeout() throws {
        let harness = try Harness(path: "/close")
        #expect(harness.takeFrames() == [0x88, 0x02, 0x03, 0xE8])  // the route closed at once
        try harness.driver.advance(by: .milliseconds(2_999))
        #expect(!harness.pair.server.isClosed)
        try harness.driver.advance(by: .milliseconds(1))
        #expect(harness.pair.server.closeReason == .aborted)
        #expect(harness.errors.all.count == 1)
    }
}
