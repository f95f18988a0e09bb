import Logging
import LoopKit
import LoopKitNet
import LoopKitTLS
// The graceful-shutdown manager that swift-service-lifecycle's `withGracefulShutdownHandler`,
// `cancelOnGracefulShutdown` and `Task.isShuttingDownGracefully` read from a task-local: handler tasks start
// from loop callbacks, outside the service's task, so the server binds one of its own for them and shuts it
// down when its graceful shutdown begins. Only this file names it.
@_spi(TestKit) import ServiceLifecycle

/// A server's presence on one loop: the cached `Date`, the deadlines' lengths, and the registry its
/// connections are kept in (LoopKitNet's, shared with the listener's endpoint on this loop: one entry per
/// connection, one graceful drain, one deadline sweep).
///
/// An ``HTTPUpgrader`` is given it at the take-over: the loop the connection lives on and the server's
/// logger are its public part.
///
/// Loop-confined: created and used on its loop's thread. It is `@unchecked Sendable` only so the server
/// can hand it to `loop.invoke`, which runs on the same loop.
public final class HTTPLoopContext: @unchecked Sendable {  // loop-confined: one per loop, used on its thread only (reached by jobs for that loop)
    /// The loop this context serves connections on. Read on any thread.
    public let loop: EventLoop
    let configuration: HTTPServer.Configuration
    let router: HTTPRouter
    /// The server's logger. Read on any thread.
    public let logger: Logger
    /// The tracer and instrument, nil when tracing is off (the no-op defaults).
    let tracing: HTTPTracing?
    /// ``tracing`` is set: tested on every request instead of the optional, whose copy costs more.
    let isTracing: Bool
    /// `https` or `http`, for the spans' `url.scheme`.
    let scheme: String
    /// Makes the ids of this loop's requests.
    @exclusivity(unchecked) var requestIDs = HTTPRequestIDGenerator()
    /// The request id field is `X-Request-ID`, which the HTTP/1 parser flags when a request carries it
    /// (``HTTPRequestHead/mayCarryRequestID``): a request without it needs no lookup.
    let requestIDFieldIsFlagged: Bool
    /// The request id field responses echo the id in (nil: none).
    let echoedRequestIDField: HTTPEchoedRequestID.Field?
    /// The access log is on and goes to a sink, or to a logger that logs at `info`: decided once, as the
    /// logger's level is read through its handler's existential (a few hundred instructions a request).
    let logsAccessLines: Bool
    /// Where access lines go as bytes (nil: the logger).
    let accessLogSink: (any HTTPAccessLogSink)?
    @exclusivity(unchecked) var dateCache = HTTPDateCache()
    /// The loop's served connections and their drain; the HTTP connection (or, after an upgrade, the
    /// WebSocket) is each one's handler.
    let registry: ConnectionRegistry
    /// Tasks of handlers whose request body was collected (async routes, chains with async middleware)
    /// that have not answered yet: what the in-memory test client waits for when its loop goes idle (their
    /// answer may come back from another thread: an actor, another loop's `perform`).
    var handlerTasksInFlight = 0

    /// What handler tasks see as graceful shutdown: shared by the server's loops, shut down when the server's
    /// graceful shutdown begins.
    let gracefulShutdown: HTTPGracefulShutdown

    /// The deadlines' lengths in nanoseconds, compared with stamps on the loop's clock
    /// (``EventLoop/clockNanoseconds``) at each sweep.
    let headTimeout: UInt64
    let bodyTimeout: UInt64
    let idleTimeout: UInt64
    let writeTimeout: UInt64
    let closeTimeout: UInt64
    /// How often the registry must sweep for these deadlines (and the upgraded protocols'): a quarter of
    /// the shortest, 5 ms…1 s.
    let sweepInterval: Duration

    init(loop: EventLoop, configuration: HTTPServer.Configuration, router: HTTPRouter, logger: Logger,
         tracing: HTTPTracing?, gracefulShutdown: HTTPGracefulShutdown = HTTPGracefulShutdown()) {
        self.loop = loop
        self.gracefulShutdown = gracefulShutdown
        self.configuration = configuration
        self.router = router.withGroupChains()
        self.logger = logger
        self.tracing = tracing
        isTracing = tracing != nil
        requestIDFieldIsFlagged = configuration.requestIDField == HTTPFieldName.requestID
        echoedRequestIDField = configuration.requestIDField.map(HTTPEchoedRequestID.Field.init)
        accessLogSink = configuration.accessLogSink
        logsAccessLines = configuration.logsAccess && (configuration.accessLogSink != nil || logger.logLevel <= .info)
        registry = ConnectionRegistry(loop: loop)
        registry.countChanged = configuration.connectionCountChanged
        scheme = configuration.tls == nil ? "http" : "https"
        // A quarter of the shortest deadline: the server's own, and those of the protocols its routes
        // upgrade to (a WebSocket's pings and close handshake), which the same sweep checks.
        let shortest = min(configuration.headTimeout, configuration.bodyTimeout, configuration.idleTimeout,
                           configuration.writeTimeout, configuration.closeTimeout,
                           self.router.shortestUpgradeDeadline ?? .seconds(Int64.max))
        let interval = max(.milliseconds(5), min(.seconds(1), shortest / 4))
        sweepInterval = interval
        headTimeout = configuration.headTimeout.clampedNanoseconds
        bodyTimeout = configuration.bodyTimeout.clampedNanoseconds
        idleTimeout = configuration.idleTimeout.clampedNanoseconds
        writeTimeout = configuration.writeTimeout.clampedNanoseconds
        closeTimeout = configuration.closeTimeout.clampedNanoseconds
    }

    /// What serves each open connection now: an HTTP connection, or what an upgrade handed it to (tests).
    var handlers: [(any ConnectionHandler)?] {
        var handlers: [(any ConnectionHandler)?] = []
        registry.forEach { handlers.append($0.handler) }
        return handlers
    }

    /// The number of open connections.
    var connectionCount: Int { registry.count }

    /// Output queued on every connection and not yet sent.
    var pendingOutputBytes: Int {
        var total = 0
        registry.forEach { total += $0.bufferedOutputCount }
        return total
    }

    /// The loop's clock now, for a deadline's stamp. Loop thread.
    var now: UInt64 { loop.clockNanoseconds }

    /// Starts the registry's deadline sweep and watches the loop's shutdown (which ends the connections).
    /// Call on the loop's thread.
    func start() throws {
        guard registry.onLoopShutdown() else { throw EventLoopError.shutDown }
        registry.sweep(every: sweepInterval)
    }

    /// Serves a connection registered in ``registry`` (by the listener's endpoint, or the in-memory host).
    /// Call on the loop's thread.
    func accept(_ tcp: Connection) {
        guard !registry.isDraining else {
            tcp.abort()
            return
        }
        if configuration.http2 != nil, configuration.tls != nil, tcp.applicationProtocol == "h2" {
            HTTP2Connection(context: self, tcp: tcp).start(replacing: false)
        } else {
            // A plain connection of a server that speaks h2c is told once its first bytes say which.
            if logger.logLevel <= .debug, configuration.tls != nil || configuration.http2 == nil {
                logProtocol(configuration.tls == nil ? "http/1.1" : "http/1.1 over TLS", of: tcp)
            }
            HTTPConnection(context: self, tcp: tcp).start()
        }
    }

    /// The protocol a new connection speaks, at debug (`LoopDemo serve --log-level debug` shows it).
    func logProtocol(_ name: String, of tcp: Connection) {
        logger.debug("connection", metadata: ["protocol": "\(name)", "peer": "\(tcp.remoteAddress.map { "\($0)" } ?? "-")"])
    }

    /// Graceful shutdown: the registry's drain (idle connections close, the others finish their current
    /// response, a WebSocket closes with 1001, whatever is left is aborted at the deadline); `onFinished`
    /// runs once every connection is gone, or the loop shut down. Call on the loop's thread.
    func shutdown(deadline: Duration, onFinished: @escaping @Sendable () -> Void) {
        gracefulShutdown.begin()
        registry.drain(deadline: deadline, whenDrained: onFinished)
    }

    /// Starts a handler's task on the loop (a route's, middleware's, a streamed body's, an upgrade's), seeing
    /// the server's graceful shutdown: inside it, `withGracefulShutdownHandler`, `cancelOnGracefulShutdown()`
    /// and `Task.isShuttingDownGracefully` answer to the server's shutdown, as in a `ServiceGroup`'s service.
    @discardableResult
    func startTask(_ operation: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        TaskLocals.$gracefulShutdownManager.withValue(gracefulShutdown.manager) {
            Task(executorPreference: loop, operation: operation)
        }
    }
}

/// A server's graceful shutdown as its handler tasks see it (swift-service-lifecycle's manager, bound as
/// their task-local). Safe from any thread.
final class HTTPGracefulShutdown: Sendable {
    let manager = GracefulShutdownManager()

    /// Tells every handler task that registered for it; once (later calls do nothing).
    func begin() { manager.shutdownGracefully() }
}
