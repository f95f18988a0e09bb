import HTTPTypes
import Logging
import LoopKit
import LoopKitNet
import LoopKitTLS
import ServiceLifecycle
import Tracing

/// An HTTP/1.1 server whose connections and handlers live on the loops of a `LoopGroup`.
///
/// Each loop of the group listens on the same port (`SO_REUSEPORT`) and keeps the connections it accepts;
/// their handlers run on that loop's thread, so `loop.process` in budget mode shares the loop with every
/// other connection on it. A swift-service-lifecycle `Service`: `ServiceGroup` runs it and its graceful
/// shutdown (SIGTERM) stops accepting, lets in-flight requests finish within
/// ``Configuration/shutdownDeadline``, closes idle keep-alive connections and returns from ``run()``.
///
/// ```swift
/// var router = HTTPRouter()
/// router.get("/hello") { _ in .text("Hello, World!") }
/// let server = HTTPServer(group: group, configuration: .init(port: 8080), router: router)
/// try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm], logger: logger).run()
/// ```
///
/// Safe from any thread.
public final class HTTPServer: Service, Sendable {
    /// What the server listens on, its limits and its timeouts; every value has a safe default.
    ///
    /// The timeouts (head, body, idle, write progress, close drain, and the WebSocket routes' deadlines)
    /// count from when their state began, on the loop's clock, and one deadline sweep per loop checks
    /// them, every quarter of the shortest (between 5 ms and 1 s; a TCP listener sharing the loop may make
    /// it finer): a timeout never ends a connection before it passed, and at most one sweep interval after
    /// (with the defaults, up to 1 s).
    public struct Configuration: Sendable {
        /// The numeric IPv4 or IPv6 address to listen on (default `127.0.0.1`).
        public var host: String
        /// The port (default 0: the kernel picks one; see ``HTTPServer/port``).
        public var port: Int
        /// Request line, head, field count and body limits.
        public var limits: HTTPParserLimits
        /// How long a client may take to send a whole request head (default 10 s); then 408 and close.
        public var headTimeout: Duration = .seconds(10)
        /// How long a body may take between its head and its end (default 30 s); then 408 and close. A body
        /// its handler reads as a stream (`router.on(_:_:bodyLimit:)`) was handed over with the request: when
        /// the client holds such a body back that long, the connection is closed without a 408.
        public var bodyTimeout: Duration = .seconds(30)
        /// How long a kept-alive connection may stay idle between requests (default 60 s); then closed.
        public var idleTimeout: Duration = .seconds(60)
        /// How long a connection's output may wait without the client taking a byte of it (default 30 s);
        /// then the connection is reset. It bounds what a client that stops reading (a response it never
        /// reads, a WebSocket it never drains) holds on the server: a descriptor and the write watermarks.
        public var writeTimeout: Duration = .seconds(30)
        /// How long a connection that is closing may take to send what it still holds (default 10 s); then
        /// it is reset. A close waits for its output; this bounds the wait.
        public var closeTimeout: Duration = .seconds(10)
        /// Called on a connection's loop thread when ``writeTimeout`` or ``closeTimeout`` cuts a connection:
        /// the hook for a counter (the cut is also logged at `debug`). nil (the default) costs nothing.
        public var connectionCut: (@Sendable (_ deadline: Deadline) -> Void)?
        /// How every failure is answered (default ``HTTPErrorRenderer/plainText``): what a handler, a
        /// middleware or an upgrade check throws (an ``HTTPError`` with its status, anything else 500), a
        /// request no route takes (404, 405, 501) and a request the server refuses itself (the parser's 400,
        /// 413, 431, 417, 501 and 505; 408 for a head or body that arrives too slowly). `.json` answers
        /// `{"error":{"status":404,"message":"Not Found"}}`. Synchronous, called on the connection's loop
        /// thread: an inline route that throws is still answered inline, with no task.
        public var errorRenderer: HTTPErrorRenderer = .plainText
        /// The response to a request the server refuses itself, before or without its handler: the parser's
        /// 400, 413, 431, 417, 501 and 505 (`error` says why) and 408 for a head or body that arrives too
        /// slowly (`error` nil). nil (the default): ``errorRenderer``'s. Whatever the closure returns goes
        /// out with the refusal's status, `Content-Length` (a streamed body is not sent), the request id and
        /// `Connection: close`. Called on the connection's loop thread.
        @available(*, deprecated, message: "set errorRenderer, which renders the server's refusals and thrown errors alike (a refusal's HTTPErrorRenderer.Failure has origin .refusal and the parser's HTTPRequestError as its error)")
        public var refusalResponse: (@Sendable (_ status: HTTPResponse.Status, _ error: HTTPRequestError?) -> HTTPServerResponse)? {
            get { legacyRefusalResponse }
            set { legacyRefusalResponse = newValue }
        }
        /// The deprecated ``refusalResponse``, which wins over ``errorRenderer`` for refusals when set.
        var legacyRefusalResponse: (@Sendable (_ status: HTTPResponse.Status, _ error: HTTPRequestError?) -> HTTPServerResponse)?
        /// How long graceful shutdown waits for in-flight requests (default 10 s); then it closes them.
        public var shutdownDeadline: Duration = .seconds(10)
        /// Unsent output above which a streamed body's writer suspends (default 64 KiB).
        public var writeHighWaterMark: Int = 64 * 1024
        /// Unsent output at which a suspended writer resumes (default 16 KiB).
        public var writeLowWaterMark: Int = 16 * 1024
        /// The listen backlog (default 1024).
        public var backlog: Int32 = 1024
        /// The kernel hands a connection to the server only once its first bytes arrive (default true;
        /// LoopKitNet's `ListenerOptions.defersAcceptUntilData`). HTTP clients speak first, so a new
        /// connection costs the server's loop one wake-up instead of two, and its first read finds the
        /// request. A client that connects and sends nothing waits in the kernel, and reaches the server
        /// (and its ``idleTimeout``) after about a second.
        public var defersAcceptUntilData = true
        /// HTTPS: a server `TLSContext` (LoopKitTLS) every connection handshakes with before its first
        /// request; nil (default): plain HTTP. Reload its certificate with `TLSContext.reload(_:)`.
        /// ALPN: a context whose configuration names no protocols answers `h2` or `http/1.1`, the client's
        /// choice in the server's order (`http/1.1` alone when ``http2`` is nil; a client that offers
        /// neither is refused with `no_application_protocol`); one that names its own is used as it is.
        public var tls: TLSContext?
        /// HTTP/2 (RFC 9113, on nghttp2) with these settings: over TLS when ALPN chooses `h2`, and in clear
        /// text for a client that starts with the HTTP/2 preface (h2c with prior knowledge; `Upgrade: h2c`
        /// is ignored, as RFC 9113 removed it). Every route answers the same over both protocols.
        /// nil: HTTP/1.1 only.
        public var http2: HTTP2Settings? = HTTP2Settings()
        /// The field a request's id is read from and echoed in (default `X-Request-ID`); a client's id
        /// of 1 to 128 visible ASCII characters is kept, any other is replaced by one the server makes.
        /// nil: ids are always made, and not echoed. See ``HTTPServerRequest/id``.
        public var requestIDField: HTTPField.Name? = HTTPFieldName.requestID
        /// The tracer that starts each request's server span and extracts its context; nil (default):
        /// the `InstrumentationSystem`'s instrument and tracer, read when the server starts (bootstrap
        /// the system first). With neither, requests get `.topLevel` contexts and no tracing work.
        public var tracer: (any Tracer)?
        /// The built-in access log: one `METHOD TARGET STATUS` line per response at `info` (default
        /// true). Turn it off when ``AccessLogMiddleware`` logs instead.
        public var logsAccess = true
        /// Where the access log's lines go as bytes, instead of to the server's logger (nil, the default:
        /// the logger, at `info`). With a sink the lines are written whatever the logger's level: the sink
        /// decides what to keep. See ``HTTPAccessLogSink``.
        public var accessLogSink: (any HTTPAccessLogSink)?
        /// Called on a connection's loop thread each time a connection opens (+1) or closes (-1), WebSockets
        /// included: the hook for an open-connections gauge (LoopKitMetrics' `HTTPServerMetrics` sets it).
        /// nil (the default) costs one check per connection.
        public var connectionCountChanged: (@Sendable (_ delta: Int) -> Void)?

        /// The deadline that cut a connection, for ``connectionCut``.
        public enum Deadline: String, Sendable {
            /// ``writeTimeout``: the client took none of the output for that long.
            case writeProgress = "write progress"
            /// ``closeTimeout``: a closing connection could not send what it held in that time.
            case closeDrain = "close drain"
        }

        /// The largest request body, a shortcut for `limits.maxBodySize` (default 1 MiB).
        public var maxBodySize: Int {
            get { limits.maxBodySize }
            set { limits.maxBodySize = newValue }
        }

        /// A configuration; the values not given keep their defaults.
        ///
        /// - Parameters:
        ///   - host: The numeric IPv4 or IPv6 address to listen on.
        ///   - port: The port, 0 for any.
        ///   - limits: The parser's limits.
        public init(host: String = "127.0.0.1", port: Int = 0, limits: HTTPParserLimits = HTTPParserLimits()) {
            self.host = host
            self.port = port
            self.limits = limits
        }
    }

    /// Where the server is in its life.
    enum Lifecycle {
        /// Created; ``HTTPServer/start()`` has not run.
        case initial
        /// Accepting on every loop.
        case running(contexts: [HTTPLoopContext], listener: TCPListener, port: Int)
        /// Graceful shutdown under way: `remaining` loops still have connections. The listener is kept
        /// until then, closed (it accepts nothing), so the connections it accepted end with their loops.
        case draining(remaining: Int, port: Int, listener: TCPListener)
        /// Every connection and listener is gone.
        case stopped
    }

    private let group: LoopGroup
    /// The configuration the server was created with.
    public let configuration: Configuration
    let router: HTTPRouter
    private let logger: Logger
    /// LoopKit's `Lock` (a `Mutex` the thread sanitizer can see).
    private let state = Lock<(lifecycle: Lifecycle, waiters: [CheckedContinuation<Void, Never>])>((.initial, []))

    /// Creates a server; it listens once ``start()`` or ``run()`` is called.
    ///
    /// - Parameters:
    ///   - group: The loops that accept and serve connections.
    ///   - configuration: Address, limits and timeouts.
    ///   - router: The routes.
    ///   - logger: The access log (info) and errors.
    public init(group: LoopGroup, configuration: Configuration = Configuration(), router: HTTPRouter,
                logger: Logger = Logger(label: "loopkit.http")) {
        self.group = group
        self.configuration = configuration
        self.router = router
        self.logger = logger
    }

    /// The port the server listens on, once started; nil before.  Safe from any thread.
    public var port: Int? {
        state.withLock { state in
            switch state.lifecycle {
            case .running(_, _, let port), .draining(_, let port, _): port
            case .initial, .stopped: nil
            }
        }
    }

    /// Starts listening on every loop of the group; returns the port. Starting twice returns the same port.
    ///
    /// - Returns: The bound port.
    /// - Throws: ``HTTPServerError/cannotListen(_:)`` with the `NetError` when the address cannot be bound
    ///   (in use, not a numeric address, not permitted);
    ///   ``HTTPServerError/invalidConfiguration(_:)`` for a server already stopped.
    ///
    /// Safe from any thread.
    @discardableResult
    public func start() throws -> Int {
        if let port { return port }
        var contexts: [HTTPLoopContext] = []
        let listener: TCPListener
        let tracing = HTTPTracing.resolve(configuration.tracer)
        let gracefulShutdown = HTTPGracefulShutdown()
        do {
            for loop in group.loops {
                let context = try loop.invokeAndWait { [configuration, router, logger, tracing] in
                    let context = HTTPLoopContext(loop: loop, configuration: configuration, router: router, logger: logger,
                                                  tracing: tracing, gracefulShutdown: gracefulShutdown)
                    try context.start()
                    return context
                }
                contexts.append(context)
            }
            var options = ListenerOptions()
            options.backlog = configuration.backlog
            options.defersAcceptUntilData = configuration.defersAcceptUntilData
            options.connection.writeHighWaterMark = configuration.writeHighWaterMark
            options.connection.writeLowWaterMark = configuration.writeLowWaterMark
            if let tls = configuration.tls {  // the protocol this server speaks, when the context names none
                let protocols = configuration.http2 == nil ? ["http/1.1"] : ["h2", "http/1.1"]
                options.tls = tls.applicationProtocols.isEmpty ? try tls.withApplicationProtocols(protocols) : tls
            }
            let byLoop = Dictionary(uniqueKeysWithValues: contexts.map { (ObjectIdentifier($0.loop), $0) })
            // Each loop's endpoint keeps its connections in the context's registry: one entry per connection.
            listener = try TCPListener.bind(to: SocketAddress(ipAddress: configuration.host, port: configuration.port),
                                            on: group, options: options, registries: contexts.map(\.registry)) { tcp in
                byLoop[ObjectIdentifier(tcp.loop)]?.accept(tcp)
            }
        } catch let error as NetError {
            shutDownNow(contexts)
            throw HTTPServerError.cannotListen(error)
        } catch {
            shutDownNow(contexts)
            throw HTTPServerError.cannotListen(.loopShutDown)  // a loop refused the context: it is shutting down
        }
        if configuration.tls != nil {  // a failed handshake never reaches a handler: log it here
            listener.onFailedHandshake { [logger] error in logger.debug("TLS handshake failed", metadata: ["error": "\(error)"]) }
        }
        let port = listener.localAddress.port
        let started = state.withLock { state -> Bool in
            guard case .initial = state.lifecycle else { return false }
            state.lifecycle = .running(contexts: contexts, listener: listener, port: port)
            return true
        }
        guard started else {
            listener.close()
            shutDownNow(contexts)
            if let current = self.port { return current }
            throw HTTPServerError.invalidConfiguration("the server has already stopped")
        }
        logger.info("listening", metadata: ["host": "\(configuration.host)", "port": "\(port)"])
        return port
    }

    /// Runs the server until graceful shutdown (or task cancellation), then shuts it down and returns.
    ///
    /// - Throws: What ``start()`` throws.
    ///
    /// Safe from any task.
    public func run() async throws {
        try start()
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await waitUntilStopped()
            } onGracefulShutdown: {
                self.beginShutdown()
            }
        } onCancel: {
            self.beginShutdown()
        }
    }

    /// Shuts down gracefully and returns when every connection is closed.
    ///
    /// Stop accepting; close idle keep-alive connections; let in-flight requests finish within
    /// ``Configuration/shutdownDeadline``, then close what is left. Safe from any task.
    public func shutdown() async {
        beginShutdown()
        await waitUntilStopped()
    }

    /// The open connections on every loop (for tests and diagnostics). Safe from any task.
    public func openConnectionCount() async throws -> Int {
        try await sumOverLoops { $0.connectionCount }
    }

    /// The bytes queued on every connection and not yet sent (for tests and diagnostics). Safe from any task.
    public func pendingOutputBytes() async throws -> Int {
        try await sumOverLoops { $0.pendingOutputBytes }
    }

    private func sumOverLoops(_ value: @escaping @Sendable (HTTPLoopContext) -> Int) async throws -> Int {
        let contexts: [HTTPLoopContext] = state.withLock { state in
            if case .running(let contexts, _, _) = state.lifecycle { return contexts }
            return []
        }
        var total = 0
        for context in contexts { total += try await context.loop.perform { value(context) } }
        return total
    }

    /// Begins graceful shutdown without waiting. Safe from any thread; calling again does nothing.
    public func beginShutdown() {
        let running: (contexts: [HTTPLoopContext], listener: TCPListener?)? = state.withLock { state in
            switch state.lifecycle {
            case .initial:
                state.lifecycle = .stopped
                return ([], nil)
            case .running(let contexts, let listener, let port):
                state.lifecycle = .draining(remaining: contexts.count, port: port, listener: listener)
                return (contexts, listener)
            case .draining, .stopped:
                return nil
            }
        }
        guard let (contexts, listener) = running else { return }
        listener?.close()
        if contexts.isEmpty { resumeWaiters() }
        let deadline = configuration.shutdownDeadline
        for context in contexts {
            do {
                try context.loop.invoke {
                    context.shutdown(deadline: deadline) { self.loopFinished() }
                }
            } catch {
                loopFinished()  // the loop has shut down, and its connections with it
            }
        }
    }

    /// Ends the loops' contexts at once (a start that failed or came too late). A loop that already shut
    /// down has no context left to end; that is logged, not thrown, since the caller is failing already.
    private func shutDownNow(_ contexts: [HTTPLoopContext]) {
        for context in contexts {
            do {
                try context.loop.invokeAndWait { context.shutdown(deadline: .zero) {} }
            } catch {
                logger.debug("loop already shut down while stopping its HTTP context", metadata: ["error": "\(error)"])
            }
        }
    }

    private func loopFinished() {
        let done = state.withLock { state -> Bool in
            guard case .draining(let remaining, let port, let listener) = state.lifecycle else { return false }
            if remaining > 1 {
                state.lifecycle = .draining(remaining: remaining - 1, port: port, listener: listener)
                return false
            }
            state.lifecycle = .stopped
            return true
        }
        if done {
            logger.info("stopped")
            resumeWaiters()
        }
    }

    private func resumeWaiters() {
        let waiters = state.withLock { state in
            let waiters = state.waiters
            state.waiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let stopped = state.withLock { state -> Bool in
                if case .stopped = state.lifecycle { return true }
                state.waiters.append(continuation)
                return false
            }
            if stopped { continuation.resume() }
        }
    }
}
