import LoopKit
import LoopKitNetTesting
import LoopKitTesting
import Testing
@testable import LoopKitHTTP
@testable import LoopKitNet

/// One registry of a loop's served connections (LoopKitNet's `ConnectionRegistry`), shared by the
/// listener's endpoint and the HTTP server on it: each connection is registered once, and the one
/// graceful drain asks what is served on each connection to close.
@Suite("One connection registry per loop")
struct ConnectionRegistryTests {
    /// A host on a stepped loop, serving one in-memory connection, with the count hook's deltas.
    final class Harness {
        let driver: LoopDriver
        let host: HTTPConnectionHost
        let pair: InMemoryConnectionPair
        let deltas = Recorder<Int>()
        var received: [UInt8] = []
        var clientClosed = false

        init(router: HTTPRouter = testRouter()) throws {
            driver = try LoopDriver()
            var configuration = HTTPServer.Configuration()
            configuration.connectionCountChanged = { [deltas] in deltas.record($0) }
            host = try HTTPConnectionHost(loop: driver.loop, configuration: configuration, router: router, logger: quietLogger)
            pair = try InMemoryConnectionPair(driver: driver)
            pair.client.onRead { [unowned self] bytes in
                received.append(contentsOf: bytes)
                return bytes.count
            }
            pair.client.onClose { [unowned self] _ in clientClosed = true }
            host.serve(pair.server)
        }

        var text: String { String(decoding: received, as: UTF8.self) }
    }

    @Test func aPlainTCPServerRegistersEachAcceptedConnectionOnce() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let counts = Recorder<Int>()
        let registry = ConnectionRegistry(loop: group.loops[0])
        let listener = try TCPListener.bind(to: SocketAddress(ipAddress: "127.0.0.1", port: 0), on: group.loops[0],
                                            registries: [registry]) { connection in
            counts.record(registry.count)  // already registered when the handler gets it
            try connection.write("hi")
        }
        let client = try RawClient(port: listener.localAddress.port)
        try await eventually { counts.all.count == 1 }
        #expect(counts.all == [1])
        #expect(listener.connectionCount == 1)
        await listener.shutdown(deadline: .seconds(5))
        #expect(listener.connectionCount == 0)
        #expect(client.readUntilClosed() == Array("hi".utf8))
    }

    @Test func anHTTPServerRegistersEachConnectionOnce() async throws {
        let group = try LoopGroup(threads: 1)
        let deltas = Recorder<Int>()
        var configuration = HTTPServer.Configuration()
        configuration.connectionCountChanged = { deltas.record($0) }
        // Counting, not timeouts: under the thread sanitizer on a loaded machine the test's awaits have taken
        // longer than the 10 s a kept-alive connection may wait for its next head, and the server closed it.
        configuration.headTimeout = .seconds(600)
        configuration.idleTimeout = .seconds(600)
        let server = HTTPServer(group: group, configuration: configuration, router: testRouter(), logger: quietLogger)
        let port = try server.start()
        let client = try RawClient(port: port)
        #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
        #expect(try await server.openConnectionCount() == 1)
        #expect(deltas.all == [1])
        await server.shutdown()
        // The client stays open until the server has shut down: Swift may end an object's life after its
        // last use, and the client's deinit closes its socket (seen under the thread sanitizer: [1, -1]).
        withExtendedLifetime(client) {}
        #expect(deltas.all == [1, -1])
        group.shutdown()
    }

    @Test func theDrainClosesAnIdleHTTPConnectionAtOnce() throws {
        let harness = try Harness()
        try harness.pair.client.write("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        try harness.driver.runUntilIdle()
        #expect(harness.text.hasPrefix("HTTP/1.1 200"))
        let finished = Recorder<Bool>()
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(true) }
        try harness.driver.runUntilIdle()
        #expect(harness.clientClosed)
        #expect(finished.all == [true])
        #expect(harness.deltas.all == [1, -1])
    }

    @Test func theDrainLetsABusyHTTPConnectionFinishItsResponse() throws {
        let harness = try Harness()
        try harness.pair.client.write("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nab")
        try harness.driver.runUntilIdle()
        let finished = Recorder<Bool>()
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(true) }
        try harness.driver.runUntilIdle()
        #expect(!harness.clientClosed)  // half a body read: the request is under way
        #expect(finished.all.isEmpty)
        try harness.pair.client.write("cd")
        try harness.driver.runUntilIdle()
        #expect(harness.text.hasPrefix("HTTP/1.1 200"))
        #expect(harness.text.lowercased().contains("connection: close"))
        #expect(harness.text.hasSuffix("abcd"))
        #expect(harness.clientClosed)
        #expect(finished.all == [true])
    }

    @Test func theDrainAbortsWhatIsLeftAtItsDeadline() throws {
        let harness = try Harness()
        try harness.pair.client.write("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nab")
        try harness.driver.runUntilIdle()
        let finished = Recorder<Bool>()
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(true) }
        try harness.driver.advance(by: .seconds(4))
        #expect(!harness.clientClosed)
        try harness.driver.advance(by: .seconds(2))
        #expect(harness.clientClosed)
        #expect(finished.all == [true])
        #expect(harness.host.connectionCount == 0)
    }

    @Test func anUpgradedConnectionStaysCountedOnceAndIsDrainedWith1001() throws {
        let harness = try Harness(router: webSocketTestRouter())
        try harness.pair.client.write(UpgradeHandOverTests.upgradeRequest)
        try harness.driver.runUntilIdle()
        #expect(harness.text.hasPrefix("HTTP/1.1 101"))
        #expect(harness.host.connectionCount == 1)
        #expect(harness.deltas.all == [1])
        #expect(harness.host.handlers.count == 1)
        #expect(harness.host.handlers.first is WebSocketCore)
        let finished = Recorder<Bool>()
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(true) }
        try harness.driver.runUntilIdle()
        let head = try #require(harness.text.range(of: "\r\n\r\n"))
        let frame = Array(harness.received[harness.text.utf8.distance(from: harness.text.startIndex, to: head.upperBound)...])
        #expect(frame.first == 0x88)  // FIN + close
        #expect(frame.count >= 4 && UInt16(frame[2]) << 8 | UInt16(frame[3]) == 1001)
        #expect(finished.all.isEmpty)  // the close handshake waits for the client's close frame
    }

    @Test func theDrainResumesItsWaiterOnceWhenTheLoopShutsDownDuringIt() throws {
        let harness = try Harness()
        try harness.pair.client.write("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nab")
        try harness.driver.runUntilIdle()
        let finished = Recorder<Bool>()
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(true) }
        try harness.driver.runUntilIdle()
        #expect(finished.all.isEmpty)
        harness.driver.loop.shutdown()
        #expect(finished.all == [true])
        #expect(harness.host.connectionCount == 0)
        #expect(harness.deltas.all == [1, -1])
    }

    @Test func aSecondDrainWaitsForTheFirstAndEachWaiterIsResumedOnce() throws {
        let harness = try Harness()
        try harness.pair.client.write("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nab")
        try harness.driver.runUntilIdle()
        let finished = Recorder<Int>()
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(1) }
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(2) }
        try harness.pair.client.write("cd")
        try harness.driver.runUntilIdle()
        try harness.driver.advance(by: .seconds(6))
        #expect(finished.all == [1, 2])
    }
}

/// One deadline sweep per registry: each tick reaches each connection's handler with the loop's clock as
/// the sweep read it, and it ticks only while connections are registered.
@Suite("One deadline sweep per registry")
struct ConnectionRegistrySweepTests {
    /// A handler that records when its deadlines are checked: the loop's clock, in nanoseconds.
    final class TickRecorder: ConnectionHandler {
        var sweptAt: [UInt64] = []

        func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int { bytes.count }

        func checkDeadlines(_ connection: Connection, now: EventLoopClock.Instant) { sweptAt.append(now.nanoseconds) }
    }

    @Test func eachTickReachesTheHandlerOfEveryRegisteredConnection() throws {
        let driver = try LoopDriver()
        let registry = ConnectionRegistry(loop: driver.loop)
        registry.sweep(every: .seconds(1))
        let pair = try InMemoryConnectionPair(driver: driver)
        let handler = TickRecorder()
        pair.server.setHandler(handler)
        let start = driver.loop.clock.now
        registry.add(pair.server)
        try driver.advance(by: .seconds(3))
        #expect(handler.sweptAt == (1...3).map { start.advanced(by: .seconds($0)).nanoseconds })
    }

    @Test func theSweepStopsWhenNoConnectionIsLeftAndStartsAgainWithTheNext() throws {
        let driver = try LoopDriver()
        let start = driver.loop.clock.now
        let registry = ConnectionRegistry(loop: driver.loop)
        registry.sweep(every: .seconds(1))
        try driver.advance(by: .seconds(5))
        #expect(registry.tick == 0)  // nothing registered: no timer
        let first = try InMemoryConnectionPair(driver: driver)
        registry.add(first.server)
        try driver.advance(by: .seconds(2))
        #expect(registry.tick == 2)
        first.server.abort()
        try driver.advance(by: .seconds(10))
        #expect(registry.tick == 3)  // one tick found no connection and stopped the timer
        #expect(driver.loop.nextTimerDeadline == nil)
        let second = try InMemoryConnectionPair(driver: driver)
        let handler = TickRecorder()
        second.server.setHandler(handler)
        registry.add(second.server)
        try driver.advance(by: .seconds(1))
        #expect(registry.tick == 4)
        #expect(handler.sweptAt == [start.advanced(by: .seconds(18)).nanoseconds])  // 1 s after it was added
    }

    @Test func anHTTPServerKeepsNoTimerOfItsOwn() throws {
        let driver = try LoopDriver()
        _ = try HTTPConnectionHost(loop: driver.loop, configuration: HTTPServer.Configuration(), router: testRouter(),
                                   logger: quietLogger)
        #expect(driver.loop.nextTimerDeadline == nil)  // the registry's sweep starts with the first connection
    }
}
