import Glibc
import LoopKit
import LoopKitNetTesting
import LoopKitTesting
import Testing
@testable import LoopKitHTTP
@testable import LoopKitNet

/// An HTTP connection's head, body and idle deadlines are stamped on the loop's clock when the state
/// begins, not counted in sweep ticks, and so are its write-progress and close-drain deadlines: one that
/// begins between two ticks is never noticed before it passed, and is noticed at most one sweep interval
/// after. The registry the server shares with other
/// parties on its loop (a TCP listener with timeouts of its own) sweeps at the finest interval any of
/// them asks for. On virtual time, in memory.
@Suite("HTTP deadlines on the loop's clock")
struct SweptHTTPDeadlineTests {
    /// A host on a stepped loop and one in-memory connection to it, served at time 0 (so the sweep ticks
    /// at multiples of its interval), whose client takes everything it is sent.
    final class Harness {
        let driver: LoopDriver
        let host: HTTPConnectionHost
        let pair: InMemoryConnectionPair
        var received: [UInt8] = []

        let cuts = Recorder<HTTPServer.Configuration.Deadline>()

        /// - Parameter readsNothing: The client never reads (the server's output waits for it).
        init(router: HTTPRouter = testRouter(), readsNothing: Bool = false,
             _ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
            driver = try LoopDriver()
            var configuration = HTTPServer.Configuration()
            configure(&configuration)
            configuration.connectionCut = { [cuts] deadline in cuts.record(deadline) }
            host = try HTTPConnectionHost(loop: driver.loop, configuration: configuration, router: router,
                                          logger: quietLogger)
            pair = try InMemoryConnectionPair(driver: driver)
            pair.client.onRead { [unowned self] bytes in
                received.append(contentsOf: bytes)
                return bytes.count
            }
            if readsNothing { pair.client.pauseReading() }
            host.serve(pair.server)
        }

        func send(_ text: String) throws {
            try pair.client.write(text)
            try driver.runUntilIdle()
        }

        var receivedText: String { String(decoding: received, as: UTF8.self) }
    }

    /// 400 ms deadlines sweep every 100 ms (ticks at 100, 200, …). The state begins at 150 ms, between two
    /// ticks: its deadline is 550 ms. Tick counting saw it begin at the 100 ms tick and ended it at 500.
    static let halfwayBetweenTicks: Duration = .milliseconds(150)

    @Test func aHeadDeadlineIsNotNoticedBeforeItPassedNorMoreThanOneIntervalAfter() throws {
        let harness = try Harness { $0.headTimeout = .milliseconds(400) }
        #expect(harness.host.registry.interval == .milliseconds(100))
        try harness.driver.advance(by: Self.halfwayBetweenTicks)
        try harness.send("GET /hello HTTP/1.1\r\n")  // a head begun, never finished
        try harness.driver.advance(by: .milliseconds(399))  // 549 ms: one millisecond before the deadline
        #expect(harness.received.isEmpty)
        #expect(harness.host.connectionCount == 1)
        try harness.driver.advance(by: .milliseconds(101))  // 650 ms: one interval after it
        try harness.driver.runUntilIdle()
        #expect(harness.receivedText.hasPrefix("HTTP/1.1 408 "))
        #expect(harness.host.connectionCount == 0)
    }

    @Test func aBodyDeadlineIsNotNoticedBeforeItPassedNorMoreThanOneIntervalAfter() throws {
        let harness = try Harness { $0.bodyTimeout = .milliseconds(400) }
        #expect(harness.host.registry.interval == .milliseconds(100))
        try harness.driver.advance(by: Self.halfwayBetweenTicks)
        try harness.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")  // 3 bytes of 10
        try harness.driver.advance(by: .milliseconds(399))
        #expect(harness.received.isEmpty)
        #expect(harness.host.connectionCount == 1)
        try harness.driver.advance(by: .milliseconds(101))
        try harness.driver.runUntilIdle()
        #expect(harness.receivedText.hasPrefix("HTTP/1.1 408 "))
        #expect(harness.host.connectionCount == 0)
    }

    @Test func anIdleDeadlineIsNotNoticedBeforeItPassedNorMoreThanOneIntervalAfter() throws {
        let harness = try Harness { $0.idleTimeout = .milliseconds(400) }
        #expect(harness.host.registry.interval == .milliseconds(100))
        try harness.driver.advance(by: Self.halfwayBetweenTicks)
        try harness.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")  // answered at once: idle from 150 ms
        #expect(harness.receivedText.hasPrefix("HTTP/1.1 200 "))
        harness.received = []
        try harness.driver.advance(by: .milliseconds(399))
        #expect(harness.host.connectionCount == 1)
        try harness.driver.advance(by: .milliseconds(101))
        try harness.driver.runUntilIdle()
        #expect(harness.host.connectionCount == 0)
        #expect(harness.received.isEmpty)  // closed without a response
    }

    @Test func aRequestAnsweredWithinOneReadCallbackRestartsTheIdleDeadlineWhenItIsAnswered() throws {
        let harness = try Harness { $0.idleTimeout = .milliseconds(400) }
        try harness.driver.advance(by: .milliseconds(350))  // idle since 0: 50 ms left
        try harness.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")  // idle → head → answered → idle, at 350 ms
        try harness.driver.advance(by: .milliseconds(399))  // 749 ms
        #expect(harness.host.connectionCount == 1)
        try harness.driver.advance(by: .milliseconds(101))
        #expect(harness.host.connectionCount == 0)
    }

    /// A 360 ms head timeout makes the sweep tick every 90 ms (90, 180, …); output that begins to wait at
    /// 100 ms with a 400 ms deadline is due at 500 and noticed at the 540 ms tick. A sweep that stamped it
    /// when it first saw it (180 ms) would have cut it at 630 ms, more than one interval late.
    static func waitingOutput(_ configure: @escaping (inout HTTPServer.Configuration) -> Void) throws -> Harness {
        let harness = try Harness(router: DeadlineTests.bigRoutes(), readsNothing: true) {
            $0.headTimeout = .milliseconds(360)
            configure(&$0)
        }
        #expect(harness.host.registry.interval == .milliseconds(90))
        try harness.driver.advance(by: .milliseconds(100))
        return harness
    }

    @Test func aWriteProgressDeadlineCountsFromWhenTheOutputLastMoved() throws {
        let harness = try Self.waitingOutput { $0.writeTimeout = .milliseconds(400) }
        try harness.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n")  // 4 MiB, which the client never takes
        #expect(harness.pair.server.bufferedOutputCount > 0)
        try harness.driver.advance(by: .milliseconds(399))  // 499 ms
        #expect(harness.host.connectionCount == 1)
        try harness.driver.advance(by: .milliseconds(91))  // 590 ms: within one interval of the deadline
        #expect(harness.host.connectionCount == 0)
        #expect(harness.cuts.all == [.writeProgress])
    }

    @Test func aCloseDrainDeadlineCountsFromWhenTheCloseBegan() throws {
        let harness = try Self.waitingOutput {
            $0.writeTimeout = .seconds(3_600)
            $0.closeTimeout = .milliseconds(400)
        }
        try harness.send("GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(harness.pair.server.isClosing)
        try harness.driver.advance(by: .milliseconds(399))
        #expect(harness.host.connectionCount == 1)
        try harness.driver.advance(by: .milliseconds(91))
        #expect(harness.host.connectionCount == 0)
        #expect(harness.cuts.all == [.closeDrain])
    }

    @Test func aTCPTimeoutOnAServersRegistryIsCheckedAtItsOwnFinerInterval() throws {
        let harness = try Harness()  // the defaults: the server sweeps every second
        #expect(harness.host.registry.interval == .seconds(1))
        try harness.driver.advance(by: .milliseconds(300))  // the server's sweep is ticking
        // One end of a Unix socket pair, with a 40 ms idle timeout (a sweep every 10 ms), registered as a
        // TCP listener sharing the loop's registry registers what it accepts; the other end stays silent.
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        defer { Glibc.close(fds[1]) }
        var options = ConnectionOptions()
        options.idleTimeout = .milliseconds(40)
        let tcp = Connection(loop: harness.driver.loop, fd: fds[0],
                                profile: ConnectionProfile(options: options, isTCP: false, accepted: true),
                                connected: true, observesShutdown: false)
        harness.host.registry.add(tcp)
        tcp.start()
        #expect(harness.host.registry.interval == .milliseconds(10))  // re-armed at the finer interval
        #expect(harness.driver.loop.liveTimerCount == 1)  // the sweep's, for both connections
        try harness.driver.advance(by: .milliseconds(39))
        #expect(tcp.closeReason == nil)  // never early
        try harness.driver.advance(by: .milliseconds(10))  // within one of its own intervals
        #expect(tcp.closeReason == .timedOut(.idle))
        // The finer asker gone, the sweep goes back to the server's interval; the server's connection stays.
        #expect(harness.host.registry.interval == .seconds(1))
        #expect(harness.host.connectionCount == 1)
    }
}
