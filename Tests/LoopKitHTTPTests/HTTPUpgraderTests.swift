import HTTPTypes
import LoopKit
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing
@testable import LoopKitHTTP

/// The generic upgrade path works for a protocol LoopKitHTTP does not know (``LineEchoUpgrader``): the
/// `101` is written, the bytes sent right behind the request reach the new handler, the HTTP connection
/// is released, the connection is counted once and closed on shutdown, with or without middleware.
@Suite("HTTP upgrader")
struct HTTPUpgraderTests {
    static let upgradeRequest = "GET /line HTTP/1.1\r\nHost: t\r\nUpgrade: line-echo\r\nConnection: Upgrade\r\n\r\n"

    /// A host on a stepped loop with a line-echo route and an HTTP route, and a client end that keeps
    /// what it receives.
    final class Harness {
        let driver: LoopDriver
        let host: HTTPConnectionHost
        let pair: InMemoryConnectionPair
        let upgrader: LineEchoUpgrader
        var received: [UInt8] = []

        init(upgrader: LineEchoUpgrader = LineEchoUpgrader(), middleware: Bool = false) throws {
            self.upgrader = upgrader
            var router = HTTPRouter()
            router.upgrade("/line", to: upgrader)
            router.get("/hello") { _ in .text("hello") }
            if middleware {
                router.use { request, next in
                    var response = try await next(request)
                    response.head.headerFields[.server] = "LoopKit"
                    return response
                }
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
        }

        var text: String { String(decoding: received, as: UTF8.self) }

        /// What came after the response head.
        var afterHead: String {
            guard let end = text.range(of: "\r\n\r\n") else { return "" }
            return String(text[end.upperBound...])
        }
    }

    @Test func theUpgradeWritesThe101AndReleasesTheHTTPConnection() throws {
        let harness = try Harness()
        weak let http = harness.host.handlers.first as? HTTPConnection
        #expect(http != nil)
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        #expect(harness.text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\nUpgrade: line-echo\r\n"))
        #expect(harness.text.contains("X-Request-ID: "))  // the request id field, as on every response
        #expect(http == nil)
        #expect(harness.upgrader.started.all == ["/line"])
    }

    @Test func bytesSentRightBehindTheRequestReachTheNewHandler() throws {
        let harness = try Harness()
        try harness.pair.client.write(Self.upgradeRequest + "early\nlate")  // one write: read together
        try harness.driver.runUntilIdle()
        #expect(harness.afterHead == "early\n")
        try harness.pair.client.write(" line\n")
        try harness.driver.runUntilIdle()
        #expect(harness.afterHead == "early\nlate line\n")
    }

    @Test func theUpgradedConnectionIsCountedOnceUntilItCloses() throws {
        let harness = try Harness()
        #expect(harness.host.connectionCount == 1)
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        #expect(harness.host.connectionCount == 1)
        #expect(harness.host.handlers.count == 1)
        #expect(harness.host.handlers.first is LineEchoHandler)
        harness.pair.client.close()
        try harness.driver.runUntilIdle()
        #expect(harness.host.connectionCount == 0)
    }

    @Test func aGracefulShutdownClosesTheUpgradedConnection() throws {
        let harness = try Harness()
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        let finished = Recorder<Bool>()
        harness.host.shutdown(deadline: .seconds(5)) { finished.record(true) }
        try harness.driver.runUntilIdle()
        #expect(harness.afterHead == "bye\n")
        #expect(harness.pair.server.isClosed)
        #expect(harness.host.connectionCount == 0)
        #expect(finished.all == [true])
    }

    @Test func aRefusedHeadIsAnsweredAsHTTPAndTheConnectionStaysHTTP() throws {
        let harness = try Harness()
        try harness.pair.client.write("GET /line HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        try harness.driver.runUntilIdle()
        #expect(harness.text.hasPrefix("HTTP/1.1 426 "))
        #expect(harness.text.hasSuffix("hello"))
        #expect(harness.host.handlers.first is HTTPConnection)
        #expect(harness.upgrader.started.all.isEmpty)
    }

    @Test func theRouteIsAskedAndItsFieldsGoOnThe101() throws {
        let upgrader = LineEchoUpgrader(shouldUpgrade: { _ in .accept([HTTPField.Name("X-Line")!: "yes"]) })
        let harness = try Harness(upgrader: upgrader)
        try harness.pair.client.write(Self.upgradeRequest + "early\n")
        try harness.driver.runUntilIdle()
        #expect(harness.text.hasPrefix("HTTP/1.1 101 "))
        #expect(harness.text.contains("\r\nX-Line: yes\r\n"))
        #expect(harness.afterHead == "early\n")
    }

    @Test func aRouteThatRefusesKeepsTheConnectionHTTP() throws {
        let upgrader = LineEchoUpgrader(shouldUpgrade: { _ in .refuse(HTTPServerResponse(status: .forbidden)) })
        let harness = try Harness(upgrader: upgrader)
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        #expect(harness.text.hasPrefix("HTTP/1.1 403 "))
        #expect(harness.host.handlers.first is HTTPConnection)
        #expect(harness.upgrader.started.all.isEmpty)
    }

    @Test func theUpgradedHandlerGetsTheSweepsTicksThroughTheHandlerProtocol() throws {
        let harness = try Harness()
        let start = harness.driver.loop.clock.now  // the server's sweep started with it
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        let handler = try #require(harness.host.handlers.first as? LineEchoHandler)
        try harness.driver.advance(by: .seconds(3))  // the server's defaults: a tick a second
        #expect(handler.sweptAt == (1...3).map { start.advanced(by: .seconds($0)).nanoseconds })
    }

    @Test func anUpgradersShortestDeadlineSetsHowOftenTheServerSweeps() throws {
        var upgrader = LineEchoUpgrader()
        upgrader.deadline = .milliseconds(100)
        let harness = try Harness(upgrader: upgrader)
        let start = harness.driver.loop.clock.now
        try harness.pair.client.write(Self.upgradeRequest)
        try harness.driver.runUntilIdle()
        let handler = try #require(harness.host.handlers.first as? LineEchoHandler)
        try harness.driver.advance(by: .milliseconds(100))  // a tick every 25 ms
        #expect(handler.sweptAt == (1...4).map { start.advanced(by: .milliseconds(25 * $0)).nanoseconds })
    }

    @Test func behindMiddlewareThe101CarriesTheMiddlewareFieldsAndTheEarlyBytesStillArrive() throws {
        let harness = try Harness(middleware: true)
        weak let http = harness.host.handlers.first as? HTTPConnection
        try harness.pair.client.write(Self.upgradeRequest + "early\n")
        try harness.driver.runUntilIdle()
        #expect(harness.text.hasPrefix("HTTP/1.1 101 "))
        #expect(harness.text.contains("\r\nServer: LoopKit\r\n"))
        #expect(harness.afterHead == "early\n")
        #expect(http == nil)
        #expect(harness.host.connectionCount == 1)
    }
}
