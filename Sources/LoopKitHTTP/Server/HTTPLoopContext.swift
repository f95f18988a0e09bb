import Logging
import LoopKit
import LoopKitNet

/// A server's presence on one loop: its connections, the cached `Date`, the timeout sweep.
///
/// Loop-confined: created and used on its loop's thread. It is `@unchecked Sendable` only so the server
/// can hand it to `loop.invoke` and the sweep timer can capture it; both run on the same loop.
final class HTTPLoopContext: @unchecked Sendable {  // loop-confined: one per loop, used on its thread only (reached by jobs for that loop)
    let loop: EventLoop
    let configuration: HTTPServer.Configuration
    let router: HTTPRouter
    let logger: Logger
    /// The tracer and instrument, nil when tracing is off (the no-op defaults).
    let tracing: HTTPTracing?
    /// `https` or `http`, for the spans' `url.scheme`.
    let scheme: String
    /// Makes the ids of this loop's requests.
    var requestIDs = HTTPRequestIDGenerator()
    var dateCache = HTTPDateCache()
    /// The response encoder this loop's connections share (one serialises at a time, then writes).
    @exclusivity(unchecked) var encoder = HTTPResponseEncoder()
    /// The connection whose bytes the encoder holds, if any.
    var encoderOwner: HTTPConnection?
    private var connections: [ObjectIdentifier: any ServedConnection] = [:]
    private var sweepTimer: ScheduledTimer?
    private var forceCloseTimer: ScheduledTimer?
    private var onFinished: (@Sendable () -> Void)?
    private(set) var isDraining = false
    /// Tasks of handlers whose request body was collected (async routes, chains with async middleware)
    /// that have not answered yet: what the in-memory test client waits for when its loop goes idle (their
    /// answer may come back from another thread: an actor, another loop's `perform`).
    var handlerTasksInFlight = 0

    /// Sweep ticks so far; a connection's timeouts are counted in ticks.
    private(set) var tick: UInt64 = 0
    let headTimeoutTicks: UInt64
    let bodyTimeoutTicks: UInt64
    let idleTimeoutTicks: UInt64
    let writeTimeoutTicks: UInt64
    let closeTimeoutTicks: UInt64
    let sweepInterval: Duration

    init(loop: EventLoop, configuration: HTTPServer.Configuration, router: HTTPRouter, logger: Logger,
         tracing: HTTPTracing?) {
        self.loop = loop
        self.configuration = configuration
        self.router = router.withGroupChains()
        self.logger = logger
        self.tracing = tracing
        scheme = configuration.tls == nil ? "http" : "https"
        let shortest = min(configuration.headTimeout, configuration.bodyTimeout, configuration.idleTimeout,
                           configuration.writeTimeout, configuration.closeTimeout)
        let interval = max(.milliseconds(5), min(.seconds(1), shortest / 4))
        sweepInterval = interval
        func ticks(_ timeout: Duration) -> UInt64 { UInt64(max(1, (timeout / interval).rounded(.up))) }
        headTimeoutTicks = ticks(configuration.headTimeout)
        bodyTimeoutTicks = ticks(configuration.bodyTimeout)
        idleTimeoutTicks = ticks(configuration.idleTimeout)
        writeTimeoutTicks = ticks(configuration.writeTimeout)
        closeTimeoutTicks = ticks(configuration.closeTimeout)
    }

    /// What serves each open connection now (for tests).
    var servedConnections: [any ServedConnection] { Array(connections.values) }

    /// The number of open connections.
    var connectionCount: Int { connections.count }

    /// Output queued on every connection and not yet sent.
    var pendingOutputBytes: Int { connections.values.reduce(0) { $0 + $1.tcp.bufferedOutputCount } }

    /// Starts the timeout sweep. Call on the loop's thread.
    func start() throws {
        sweepTimer = try loop.schedule(after: sweepInterval, repeating: sweepInterval) { [self] in sweep() }
        // A loop that shuts down under a running server takes its connections with it: sockets closed,
        // nothing left watching them. The observer holds the context strongly, as the sweep timer does:
        // both are dropped in `finish()`, so neither extends its life. (A weak reference would give the
        // context a side table, and every retain and release of it, one per request copy, the runtime's
        // slow path.)
        guard loop.addShutdownObserver(ObjectIdentifier(self), { [self] in loopIsShuttingDown() }) else {
            throw EventLoopError.shutDown
        }
    }

    /// The loop shuts down (its shutdown observer): close every connection now (the listener's own
    /// observer stops accepting).
    private func loopIsShuttingDown() {
        isDraining = true
        closeAllNow()
        finish()
    }

    /// Serves a connection the server's listener accepted on this loop. Call on the loop's thread.
    func accept(_ tcp: TCPConnection) {
        guard !isDraining else {
            tcp.abort()
            return
        }
        let connection = HTTPConnection(context: self, tcp: tcp)
        connections[ObjectIdentifier(connection)] = connection
        configuration.connectionCountChanged?(1)
        connection.start()
    }

    /// An upgrade: `upgraded` takes `connection`'s place (the same TCP connection; the count is unchanged),
    /// and the context lets go of the HTTP connection. Call on the loop's thread.
    func replace(_ connection: HTTPConnection, with upgraded: UpgradedConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        connections[ObjectIdentifier(upgraded)] = upgraded
    }

    func remove(_ connection: any ServedConnection) {
        if connections.removeValue(forKey: ObjectIdentifier(connection)) != nil { configuration.connectionCountChanged?(-1) }
        if isDraining && connections.isEmpty { finish() }
    }

    private func sweep() {
        tick &+= 1
        guard !connections.isEmpty else { return }
        for connection in Array(connections.values) { connection.checkTimeout(now: tick) }
    }

    /// Graceful shutdown: stop accepting, close idle connections, let the others finish their current
    /// response, and close whatever is left at the deadline; `onFinished` runs once every connection is
    /// gone. Call on the loop's thread.
    func shutdown(deadline: Duration, onFinished: @escaping @Sendable () -> Void) {
        guard !isDraining else { return }
        isDraining = true
        self.onFinished = onFinished
        for connection in Array(connections.values) { connection.shutdown() }
        if connections.isEmpty {
            finish()
            return
        }
        do {
            forceCloseTimer = try loop.schedule(after: deadline) { [self] in closeAllNow() }
        } catch {
            closeAllNow()  // the loop is shutting down: no deadline to wait for
        }
    }

    /// Closes every connection at once (the graceful deadline passed). Loop thread.
    private func closeAllNow() {
        for connection in Array(connections.values) { connection.tcp.abort() }
    }

    private func finish() {
        loop.removeShutdownObserver(ObjectIdentifier(self))
        sweepTimer?.cancel()
        sweepTimer = nil
        forceCloseTimer?.cancel()
        forceCloseTimer = nil
        let done = onFinished
        onFinished = nil
        done?()
    }
}
