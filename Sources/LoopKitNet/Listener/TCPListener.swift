import LoopKit
import Synchronization

/// Accepts connections on a TCP or Unix-domain address, on one loop or on every loop of a `LoopGroup`.
///
/// ```swift
/// let group = try LoopGroup(threads: 2)
/// let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group) { connection in
///     for try await chunk in connection.inbound { try await connection.send(chunk) }   // echo
/// }
/// print("listening on \(listener.localAddress)")
/// ```
///
/// On a group, each loop gets a listening socket of its own on the same address (`SO_REUSEPORT`) and
/// the kernel spreads new connections across them; each connection lives on the loop that accepted it.
/// With the `handler:` variants each connection runs in a `Task` on its loop (the loop is the task's
/// executor), and is closed gracefully when the handler returns or throws; with `onAccept:` the callback
/// runs on the loop's thread and the connection is the callback's to handle (closed gracefully if the
/// callback throws). A trailing closure that awaits picks `handler:`; one that does not picks `onAccept:`.
///
/// Safe from any thread: every method hops to the listening loops as needed.
public final class TCPListener: Sendable {
    /// The address the listener is bound to, with the port the kernel picked when asked for port 0.
    public let localAddress: SocketAddress
    /// The loops accepting connections.
    public var loops: [EventLoop] { endpoints.map(\.loop) }

    let endpoints: [ListenerEndpoint]
    let failedHandshakes: FailedHandshakes

    init(localAddress: SocketAddress, endpoints: [ListenerEndpoint], failedHandshakes: FailedHandshakes) {
        self.localAddress = localAddress
        self.endpoints = endpoints
        self.failedHandshakes = failedHandshakes
    }

    /// What a listener does with each accepted connection.
    enum Acceptor: Sendable {
        case callback(@Sendable (Connection) throws -> Void)
        case task(@Sendable (Connection) async throws -> Void)
    }

    // MARK: Binding

    /// Binds to `address` on `loops` (one loop, or every loop of a `LoopGroup`), calling `onAccept` on the
    /// accepting loop's thread with each new connection.
    ///
    /// On a group each loop gets a socket of its own on the same address (`SO_REUSEPORT`, set only for a
    /// group's sockets: a single listener on a port in use fails with ``NetError/addressInUse(_:)``).
    ///
    /// - Parameters:
    ///   - address: A numeric IPv4/IPv6 address and port (port 0 picks a free port, shared by a group's
    ///     loops), or a Unix-domain path (one loop only).
    ///   - loops: An `EventLoop`, or a `LoopGroup`: the loops that accept and own the connections.
    ///   - options: Backlog and per-connection settings.
    ///   - onAccept: Called on the accepting loop's thread with each connection, already reading; if it
    ///     throws, the connection is closed gracefully.
    /// - Returns: The listener, accepting.
    /// - Throws: ``NetError/addressInUse(_:)``, ``NetError/permissionDenied(_:)``,
    ///   ``NetError/invalidAddress(_:)``, ``NetError/loopShutDown``, ``NetError/system(_:_:)``.
    ///
    /// Safe from any thread, except from a loop of a group when binding on the group (binding waits for
    /// each loop). The corresponding system calls are `socket`, `bind` and `listen`.
    public static func bind(
        to address: SocketAddress, on loops: some AcceptingLoops, options: ListenerOptions = .init(),
        onAccept: @escaping @Sendable (Connection) throws -> Void
    ) throws(NetError) -> TCPListener {
        try bind(to: address, loops: loops.acceptingLoops, options: options, acceptor: .callback(onAccept))
    }

    /// Binds to `address` on `loops`, running `handler` for each connection in a `Task` on the
    /// connection's loop (its task executor); the connection is closed gracefully when `handler` returns
    /// or throws.
    ///
    /// - Parameters:
    ///   - address: A numeric address and port, or a Unix-domain path.
    ///   - loops: An `EventLoop`, or a `LoopGroup`.
    ///   - options: Backlog and per-connection settings.
    ///   - handler: Runs on the connection's loop for each connection.
    /// - Returns: The listener, accepting.
    /// - Throws: As ``bind(to:on:options:onAccept:)``.
    ///
    /// Safe from any thread (see ``bind(to:on:options:onAccept:)``).
    public static func bind(
        to address: SocketAddress, on loops: some AcceptingLoops, options: ListenerOptions = .init(),
        handler: @escaping @Sendable (Connection) async throws -> Void
    ) throws(NetError) -> TCPListener {
        try bind(to: address, loops: loops.acceptingLoops, options: options, acceptor: .task(handler))
    }

    /// Binds to a numeric `host` and `port` on `loops`; see ``bind(to:on:options:onAccept:)``.
    /// - Parameters:
    ///   - host: A numeric IPv4 or IPv6 address (`127.0.0.1`, `::1`, `0.0.0.0`).
    ///   - port: 0 to 65535; 0 picks a free port.
    ///   - loops: An `EventLoop`, or a `LoopGroup`.
    ///   - options: Backlog and per-connection settings.
    ///   - onAccept: Called on the accepting loop's thread with each connection.
    /// - Returns: The listener.
    /// - Throws: As ``bind(to:on:options:onAccept:)``.
    ///
    /// Safe from any thread (see ``bind(to:on:options:onAccept:)``).
    public static func bind(
        host: String, port: Int, on loops: some AcceptingLoops, options: ListenerOptions = .init(),
        onAccept: @escaping @Sendable (Connection) throws -> Void
    ) throws(NetError) -> TCPListener {
        try bind(to: SocketAddress(ipAddress: host, port: port), on: loops, options: options, onAccept: onAccept)
    }

    /// Binds to a numeric `host` and `port` on `loops` with an async handler; see
    /// ``bind(to:on:options:handler:)``.
    /// - Parameters:
    ///   - host: A numeric IPv4 or IPv6 address.
    ///   - port: 0 to 65535; 0 picks a free port.
    ///   - loops: An `EventLoop`, or a `LoopGroup`.
    ///   - options: Backlog and per-connection settings.
    ///   - handler: Runs on the connection's loop for each connection.
    /// - Returns: The listener.
    /// - Throws: As ``bind(to:on:options:onAccept:)``.
    ///
    /// Safe from any thread (see ``bind(to:on:options:onAccept:)``).
    public static func bind(
        host: String, port: Int, on loops: some AcceptingLoops, options: ListenerOptions = .init(),
        handler: @escaping @Sendable (Connection) async throws -> Void
    ) throws(NetError) -> TCPListener {
        try bind(to: SocketAddress(ipAddress: host, port: port), on: loops, options: options, handler: handler)
    }

    /// Binds on every loop of `loops`; an endpoint keeps its connections in `registries`' registry for its
    /// loop (a server that shares it with its endpoints), else in one of its own.
    package static func bind(
        to address: SocketAddress, on loops: some AcceptingLoops, options: ListenerOptions = .init(),
        registries: [ConnectionRegistry], onAccept: @escaping @Sendable (Connection) throws -> Void
    ) throws(NetError) -> TCPListener {
        try bind(to: address, loops: loops.acceptingLoops, options: options, acceptor: .callback(onAccept),
                 registries: registries)
    }

    static func bind(
        to address: SocketAddress, loops: [EventLoop], options: ListenerOptions, acceptor: Acceptor,
        registries: [ConnectionRegistry] = []
    ) throws(NetError) -> TCPListener {
        let reusePort = loops.count > 1
        if let security = options.security?.layer, !security.isServer {
            throw .tls("a listener needs a server TLSContext (this one is a client's)")
        }
        if address.family == .unix, loops.count > 1 {
            throw .invalidAddress("a Unix-domain socket listens on one loop, not \(loops.count)")
        }
        var endpoints: [ListenerEndpoint] = []
        let failedHandshakes = FailedHandshakes()
        var bound = address
        do throws(NetError) {
            for loop in loops {
                let fd = try Socket.listen(at: bound, reusePort: reusePort, backlog: options.backlog,
                                           deferAcceptSeconds: options.defersAcceptUntilData
                                               ? Int32(clamping: max(1, options.deferralTimeout.components.seconds)) : 0)
                if bound.family != .unix, bound.port == 0, let actual = Socket.localAddress(of: fd) {
                    bound = actual  // the rest of the group binds the port the kernel picked
                }
                let endpoint = ListenerEndpoint(loop: loop, fd: fd, options: options.connection, security: options.security?.layer, acceptor: acceptor,
                                                unixPath: address.family == .unix ? address.host : nil,
                                                failedHandshakes: failedHandshakes,
                                                registry: registries.first { $0.loop === loop })
                endpoints.append(endpoint)
                try endpoint.register()
            }
        } catch {
            for endpoint in endpoints { endpoint.closeFromAnyThread() }
            throw error
        }
        return TCPListener(localAddress: bound, endpoints: endpoints, failedHandshakes: failedHandshakes)
    }

    // MARK: Control

    /// Stops accepting; connections already accepted are not affected, and new ones wait in the kernel's
    /// backlog. Safe from any thread.
    public func pause() {
        for endpoint in endpoints { endpoint.onLoop { $0.pause() } }
    }

    /// Accepts again after ``pause()``. Safe from any thread.
    public func resume() {
        for endpoint in endpoints { endpoint.onLoop { $0.resume() } }
    }

    /// Stops accepting for good and releases the listening sockets (a Unix-domain socket's file is
    /// removed); connections already accepted are not affected. Safe from any thread.
    public func close() {
        for endpoint in endpoints { endpoint.closeFromAnyThread() }
    }

    /// Stops accepting, closes every accepted connection gracefully (its output flushed) and returns once
    /// all of them have ended. Connections still open after `deadline` are aborted.
    ///
    /// - Parameter deadline: How long connections may take to flush. Default 10 seconds.
    ///
    /// Safe from any thread; do not call it from a task running on one of the listener's loops with
    /// connections on other loops blocked, as the loops must be running for the connections to end.
    public func shutdown(deadline: Duration = .seconds(10)) async {
        close()
        for endpoint in endpoints {
            await endpoint.closeConnections(deadline: deadline)
        }
    }

    /// The number of accepted connections whose TLS handshake failed (garbage instead of a ClientHello, a
    /// truncated or stalled handshake, a refused certificate, no common version or cipher), across its
    /// loops; 0 without TLS. Safe from any thread.
    public var failedHandshakeCount: Int { failedHandshakes.count.load(ordering: .relaxed) }

    /// Calls `body` with the reason of each TLS handshake that fails from now on: a connection that fails
    /// its handshake never reaches the listener's handler, so this is where a server logs it.
    ///
    /// - Parameter body: Called on the accepting loop's thread with ``NetError/tls(_:)`` and OpenSSL's
    ///   reason text, or ``NetError/connectionClosed(_:)`` when the peer left (or the handshake timed out,
    ///   as ``CloseReason/tls(_:)``). Replaces an earlier observer; nil removes it.
    ///
    /// Safe from any thread.
    public func onFailedHandshake(_ body: (@Sendable (NetError) -> Void)?) {
        failedHandshakes.observer.withLock { $0 = body }
    }

    /// The number of open connections this listener accepted, across its loops. Safe from any thread.
    public var connectionCount: Int {
        endpoints.reduce(0) { $0 + $1.registry.count }
    }
}

/// Where a listener accepts: one `EventLoop`, or every loop of a `LoopGroup`.
public protocol AcceptingLoops: Sendable {
    /// The loops, each of which gets a listening socket of its own.
    var acceptingLoops: [EventLoop] { get }
}

extension EventLoop: AcceptingLoops {
    /// This loop alone.
    public var acceptingLoops: [EventLoop] { [self] }
}

extension LoopGroup: AcceptingLoops {
    /// Every loop of the group.
    public var acceptingLoops: [EventLoop] { loops }
}
