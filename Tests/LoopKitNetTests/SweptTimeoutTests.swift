import Glibc
import LoopKit
import LoopKitNetTesting
import LoopKitTesting
import Testing
@testable import LoopKitNet

/// The timeouts of ``ConnectionOptions`` on a connection a registry keeps (what a listener accepts) are
/// checked by the registry's one deadline sweep, with no timer of the connection's own; a connection no
/// registry keeps (opened with `connect`) keeps its timer. On virtual time: the sweep ticks every quarter
/// of the shortest timeout, so a timeout ends the connection at the first tick at or after it passed.
@Suite("Connection timeouts on the registry's sweep")
struct SweptTimeoutTests {
    /// One end of a Unix-domain socket pair as a connection on `driver`'s loop (a listener's role), and
    /// the other end's raw descriptor, which the test neither reads nor writes unless it says so.
    final class SocketEnd {
        let connection: Connection
        let peer: Int32

        init(driver: LoopDriver, options: ConnectionOptions, registry: ConnectionRegistry?) {
            var fds: [Int32] = [0, 0]
            precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
            peer = fds[1]
            connection = Connection(loop: driver.loop, fd: fds[0],
                                       profile: ConnectionProfile(options: options, isTCP: false, accepted: registry != nil),
                                       connected: true, observesShutdown: registry == nil)
            registry?.add(connection)  // as a listener's endpoint does: registered before it starts
            connection.start()
        }

        deinit {
            Glibc.close(peer)
        }
    }

    /// A handler that takes every byte and records when the sweep looked at it (the loop's clock, in
    /// nanoseconds), checking no deadline of its own.
    final class TickRecorder: ConnectionHandler {
        var sweptAt: [UInt64] = []

        func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int { bytes.count }

        func checkDeadlines(_ connection: Connection, now: EventLoopClock.Instant) { sweptAt.append(now.nanoseconds) }
    }

    static func options(_ configure: (inout ConnectionOptions) -> Void) -> ConnectionOptions {
        var options = ConnectionOptions()
        configure(&options)
        return options
    }

    @Test func aRegisteredConnectionsIdleTimeoutEndsItAtTheSweepWithNoTimerOfItsOwn() throws {
        let driver = try LoopDriver()
        let registry = ConnectionRegistry(loop: driver.loop)
        let ends = (0..<3).map { _ in
            SocketEnd(driver: driver, options: Self.options { $0.idleTimeout = .milliseconds(400) }, registry: registry)
        }
        #expect(registry.interval == .milliseconds(100))  // a quarter of the timeout
        #expect(driver.loop.liveTimerCount == 1)  // the sweep's, for all three
        try driver.advance(by: .milliseconds(399))
        #expect(ends.allSatisfy { $0.connection.closeReason == nil })  // never before the timeout
        try driver.advance(by: .milliseconds(1))
        #expect(ends.allSatisfy { $0.connection.closeReason == .timedOut(.idle) })
        #expect(registry.count == 0)
    }

    @Test func aRegisteredConnectionsReadTimeoutEndsItAtTheSweepWhileItReads() throws {
        let driver = try LoopDriver()
        let registry = ConnectionRegistry(loop: driver.loop)
        let end = SocketEnd(driver: driver, options: Self.options { $0.readTimeout = .milliseconds(200) }, registry: registry)
        #expect(driver.loop.liveTimerCount == 1)
        try driver.advance(by: .milliseconds(150))
        #expect(write(end.peer, "x", 1) == 1)  // bytes read: the read timeout starts again
        try driver.runUntilIdle()
        try driver.advance(by: .milliseconds(150))
        #expect(end.connection.closeReason == nil)
        try driver.advance(by: .milliseconds(100))  // 200 ms after the byte, at a tick 50 ms past it at most
        #expect(end.connection.closeReason == .timedOut(.read))
    }

    @Test func aRegisteredConnectionsWriteTimeoutEndsItAtTheSweepWhileOutputWaits() throws {
        let driver = try LoopDriver()
        let registry = ConnectionRegistry(loop: driver.loop)
        let end = SocketEnd(driver: driver, options: Self.options { $0.writeTimeout = .milliseconds(200) }, registry: registry)
        try driver.advance(by: .seconds(5))  // no output waiting: no write timeout
        #expect(end.connection.closeReason == nil)
        try end.connection.write(Bytes([UInt8](repeating: 0, count: 4 << 20)))  // far more than the socket takes
        #expect(end.connection.bufferedOutputCount > 0)
        #expect(driver.loop.liveTimerCount == 1)
        try driver.advance(by: .milliseconds(150))
        #expect(end.connection.closeReason == nil)
        try driver.advance(by: .milliseconds(100))
        #expect(end.connection.closeReason == .timedOut(.write))
    }

    @Test func theConnectionChecksItsTimeoutsBeforeItsHandlerWhichCannotSkipThem() throws {
        let driver = try LoopDriver()
        let start = driver.loop.clock.now
        let registry = ConnectionRegistry(loop: driver.loop)
        let end = SocketEnd(driver: driver, options: Self.options { $0.idleTimeout = .milliseconds(400) }, registry: registry)
        let handler = TickRecorder()
        end.connection.setHandler(handler)
        try driver.advance(by: .seconds(1))
        // Ticks every 100 ms; the fourth found the idle timeout passed: the handler was not asked.
        #expect(handler.sweptAt == (1...3).map { start.advanced(by: .milliseconds(100 * $0)).nanoseconds })
        #expect(end.connection.closeReason == .timedOut(.idle))
    }

    @Test func aConnectionThatJoinsARegistryGivesUpItsTimer() throws {
        let driver = try LoopDriver()
        let end = SocketEnd(driver: driver, options: Self.options { $0.idleTimeout = .milliseconds(400) }, registry: nil)
        #expect(driver.loop.liveTimerCount == 1)  // its own
        let registry = ConnectionRegistry(loop: driver.loop)
        registry.add(end.connection)  // as an in-memory HTTP host serves a connection made before
        #expect(driver.loop.liveTimerCount == 1)  // the registry's sweep only
        try driver.advance(by: .milliseconds(400))
        #expect(end.connection.closeReason == .timedOut(.idle))
    }

    @Test func aConnectionNoRegistryKeepsTimesOutOnItsOwnTimer() throws {
        let driver = try LoopDriver()
        let end = SocketEnd(driver: driver, options: Self.options { $0.idleTimeout = .milliseconds(400) }, registry: nil)
        #expect(driver.loop.liveTimerCount == 1)
        try driver.advance(by: .milliseconds(399))
        #expect(end.connection.closeReason == nil)
        try driver.advance(by: .milliseconds(1))  // on time: its timer is set for the deadline itself
        #expect(end.connection.closeReason == .timedOut(.idle))
        #expect(driver.loop.liveTimerCount == 0)
    }

    @Test func aListenersEndpointAsksItsRegistryToSweepForItsConnectionsTimeouts() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let registry = try await onLoop(loop) { ConnectionRegistry(loop: loop) }
        var options = ListenerOptions()
        options.connection.readTimeout = .seconds(2)
        options.connection.idleTimeout = .seconds(60)
        let timers = Recorder<Int>()
        let listener = try TCPListener.bind(to: SocketAddress(ipAddress: "127.0.0.1", port: 0), on: loop, options: options,
                                            registries: [registry]) { _ in timers.record(loop.liveTimerCount) }
        #expect(try await read(on: loop) { registry.interval } == .milliseconds(500))
        #expect(connectNonBlocking(1, to: listener.localAddress.port, waitingAtMost: .seconds(20)) == 1)  // a raw client
        #expect(await eventually { timers.all.count == 1 })
        #expect(timers.all == [1])  // the accepted connection made none: the sweep's timer alone
        await listener.shutdown()
    }

    @Test func theSweepTicksAtTheFinestIntervalAskedForAndGoesBackWhenItsAskerLeaves() throws {
        let driver = try LoopDriver()
        let start = driver.loop.clock.now
        let registry = ConnectionRegistry(loop: driver.loop)
        registry.sweep(every: .seconds(1))  // as an HTTP server's loop context does
        let end = SocketEnd(driver: driver, options: ConnectionOptions(), registry: registry)
        let handler = TickRecorder()
        end.connection.setHandler(handler)
        try driver.advance(by: .milliseconds(300))
        #expect(handler.sweptAt.isEmpty)
        registry.sweep(every: .milliseconds(10))  // finer: the sweep is re-armed now
        #expect(registry.interval == .milliseconds(10))
        try driver.advance(by: .milliseconds(100))
        #expect(handler.sweptAt == (1...10).map { start.advanced(by: .milliseconds(300 + 10 * $0)).nanoseconds })  // 310 … 400 ms
        registry.sweep(every: .milliseconds(500))  // coarser than the finest: nothing changes
        #expect(registry.interval == .milliseconds(10))
        registry.stopSweeping(every: .milliseconds(10))
        #expect(registry.interval == .milliseconds(500))  // the finest still asked for
        registry.stopSweeping(every: .milliseconds(500))
        #expect(registry.interval == .seconds(1))
        try driver.advance(by: .milliseconds(999))
        #expect(handler.sweptAt.count == 10)
        try driver.advance(by: .milliseconds(1))
        #expect(handler.sweptAt.count == 11)
        #expect(handler.sweptAt.last == start.advanced(by: .milliseconds(1_400)).nanoseconds)  // 1 s after it went back
        #expect(driver.loop.liveTimerCount == 1)
    }

    @Test func aConnectionsTimeoutOnACoarserRegistryIsCheckedAtItsOwnInterval() throws {
        let driver = try LoopDriver()
        let registry = ConnectionRegistry(loop: driver.loop)
        registry.sweep(every: .seconds(1))
        let end = SocketEnd(driver: driver, options: Self.options { $0.idleTimeout = .milliseconds(40) }, registry: registry)
        #expect(registry.interval == .milliseconds(10))
        try driver.advance(by: .milliseconds(39))
        #expect(end.connection.closeReason == nil)
        try driver.advance(by: .milliseconds(10))
        #expect(end.connection.closeReason == .timedOut(.idle))
        #expect(registry.interval == .seconds(1))  // it asked while it was registered
    }

    @Test func aListenerThatClosesWithdrawsItsSweepInterval() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let registry = try await onLoop(loop) {
            let registry = ConnectionRegistry(loop: loop)
            registry.sweep(every: .seconds(1))  // the server sharing it
            return registry
        }
        var options = ListenerOptions()
        options.connection.readTimeout = .milliseconds(100)
        let listener = try TCPListener.bind(to: SocketAddress(ipAddress: "127.0.0.1", port: 0), on: loop, options: options,
                                            registries: [registry]) { _ in }
        #expect(try await read(on: loop) { registry.interval } == .milliseconds(25))
        listener.close()  // from this thread: a job for the loop, which runs before the read's
        #expect(try await read(on: loop) { registry.interval } == .seconds(1))
    }
}
