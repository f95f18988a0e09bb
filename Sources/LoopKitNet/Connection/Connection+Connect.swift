import Dispatch
import LoopKit

extension Connection {
    /// Connects to a numeric address (IPv4, IPv6 or a Unix-domain socket) from a connection on `loop`.
    /// (`LoopKitTLS` adds the same with `tls:`.)
    ///
    /// - Parameters:
    ///   - address: Where to connect.
    ///   - loop: The loop the connection will live on.
    ///   - options: The connection's settings.
    ///   - timeout: How long the connect may take. Default 10 seconds.
    /// - Returns: The open connection.
    /// - Throws: ``NetError/connectionRefused(_:)``, ``NetError/connectTimedOut``,
    ///   ``NetError/loopShutDown``, ``NetError/system(_:_:)`` for other socket errors.
    ///
    /// Safe from any thread. The corresponding system call is a non-blocking `connect`.
    public static func connect(
        to address: SocketAddress, on loop: EventLoop, options: ConnectionOptions = .init(),
        timeout: Duration = .seconds(10)
    ) async throws(NetError) -> Connection {
        try await connect(to: address, on: loop, options: options, timeout: timeout, security: nil, serverName: nil)
    }

    /// ``connect(to:on:options:timeout:)`` with `security` (a client's TLS) over the socket: the
    /// connection is returned once its handshake is done. `serverName` nil: the address itself.
    package static func connect(
        to address: SocketAddress, on loop: EventLoop, options: ConnectionOptions, timeout: Duration,
        security: (any TransportSecurity)?, serverName: String?
    ) async throws(NetError) -> Connection {
        let deadline = loop.clockNanoseconds &+ UInt64(max(0, timeout / .nanoseconds(1)))
        let secure = try security.map { layer throws(NetError) in try SecureConnect(layer, serverName: serverName ?? address.host) }
        return try await connect(toAny: [address], on: loop, options: options, deadline: deadline, security: secure)
    }

    /// Resolves `host` (off the loop's thread, with the system resolver: `/etc/hosts`, then DNS), then
    /// connects to `host:port` from a connection on `loop`, trying each address in the resolver's order
    /// until one answers. A numeric host skips resolution.
    ///
    /// - Parameters:
    ///   - host: A host name or numeric address.
    ///   - port: The port, 1 to 65535.
    ///   - loop: The loop the connection will live on.
    ///   - options: The connection's settings.
    ///   - timeout: How long resolution and connect together may take. Default 10 seconds.
    /// - Returns: The open connection.
    /// - Throws: ``NetError/nameResolutionFailed(host:reason:)`` besides what
    ///   ``connect(to:on:options:timeout:)`` throws; ``NetError/invalidAddress(_:)`` for a bad port.
    ///
    /// Safe from any thread. The corresponding C call is `getaddrinfo`, on a Dispatch queue. (`LoopKitTLS`
    /// adds the same with `tls:`.)
    public static func connect(
        host: String, port: Int, on loop: EventLoop, options: ConnectionOptions = .init(),
        timeout: Duration = .seconds(10)
    ) async throws(NetError) -> Connection {
        try await connect(host: host, port: port, on: loop, options: options, timeout: timeout, security: nil)
    }

    /// ``connect(host:port:on:options:timeout:)`` with `security` (a client's TLS) over the socket, naming
    /// `host` (SNI, and the name the server's certificate must carry).
    package static func connect(
        host: String, port: Int, on loop: EventLoop, options: ConnectionOptions, timeout: Duration,
        security: (any TransportSecurity)?
    ) async throws(NetError) -> Connection {
        guard (1...65_535).contains(port) else { throw .invalidAddress("port \(port) is out of range 1...65535") }
        let numeric: SocketAddress?
        do {
            numeric = try SocketAddress(ipAddress: host, port: port)
        } catch {
            numeric = nil  // not a numeric address: a name, resolved below (its failures are thrown there)
        }
        if let numeric {
            return try await connect(to: numeric, on: loop, options: options, timeout: timeout, security: security, serverName: host)
        }
        let deadline = loop.clockNanoseconds &+ UInt64(max(0, timeout / .nanoseconds(1)))
        let resolved = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<[SocketAddress], NetError>, Never>) in
                DispatchQueue.global().async { continuation.resume(returning: Socket.resolve(host: host, port: port)) }
            }
        } onCancel: {}
        let addresses = try resolved.get()
        guard loop.clockNanoseconds < deadline else { throw .connectTimedOut }
        let secure = try security.map { layer throws(NetError) in try SecureConnect(layer, serverName: host) }
        return try await connect(toAny: addresses, on: loop, options: options, deadline: deadline, security: secure)
    }

    /// Tries `addresses` in order until one connects; throws the last failure.
    private static func connect(
        toAny addresses: [SocketAddress], on loop: EventLoop, options: ConnectionOptions, deadline: UInt64,
        security: SecureConnect?
    ) async throws(NetError) -> Connection {
        var lastError = NetError.connectTimedOut
        for address in addresses {
            let now = loop.clockNanoseconds
            guard now < deadline else { throw .connectTimedOut }
            let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Connection, NetError>, Never>) in
                let work: @Sendable () -> Void = {
                    startConnect(to: address, on: loop, options: options, security: security,
                                 timeout: .nanoseconds(Int64(deadline - now)), continuation: continuation)
                }
                if loop.isCurrent {
                    work()
                } else {
                    do { try loop.enqueue(work) } catch { continuation.resume(returning: .failure(.loopShutDown)) }
                }
            }
            switch result {
            case .success(let connection):
                return connection
            case .failure(let error):
                if case .tls = error { throw error }  // the server answered: another address would not help
                if error == .loopShutDown || error == .connectTimedOut { throw error }
                lastError = error
            }
        }
        throw lastError
    }

    /// Opens a socket and starts a non-blocking connect; the connection resumes `continuation` once.
    /// Loop thread only.
    private static func startConnect(
        to address: SocketAddress, on loop: EventLoop, options: ConnectionOptions, security: SecureConnect?,
        timeout: Duration, continuation: UnsafeContinuation<Result<Connection, NetError>, Never>
    ) {
        guard loop.isAcceptingWork else {
            continuation.resume(returning: .failure(.loopShutDown))
            return
        }
        let fd: Int32
        do throws(NetError) {
            fd = try Socket.open(address.family)
        } catch {
            continuation.resume(returning: .failure(error))
            return
        }
        let transport: Transport
        do throws(NetError) {
            transport = try SocketTransport(fd: fd).secured(by: security?.layer, serverName: security?.serverName, on: loop)
        } catch {
            continuation.resume(returning: .failure(error))  // the socket transport closed the descriptor
            return
        }
        let profile = ConnectionProfile(options: options, isTCP: address.family != .unix, accepted: false)
        let connection = Connection(loop: loop, transport: transport, profile: profile, connected: false)
        connection.cachedRemoteAddress = address
        if let reason = connection.closeReason {  // the loop began shutting down
            continuation.resume(returning: .failure(reason == .shutDown ? .loopShutDown : .connectionClosed(reason)))
            return
        }
        connection.connectWaiter = continuation
        do throws(NetError) {
            switch try Socket.connect(fd, to: address) {
            case .connected:
                connection.connectDidFinish()
                return
            case .inProgress:
                connection.writeWatch = try wrapped { () throws(EventLoopError) in
                    try loop.watch(fd, for: .writable) { [unowned connection] _ in connection.connectBecameWritable(address) }
                }
                connection.isWriteWatchActive = true
                connection.connectTimer = try wrapped { () throws(EventLoopError) in
                    try loop.schedule(after: timeout) { [weak connection] in
                        connection?.connectDidFail(error: .connectTimedOut)
                    }
                }
            }
        } catch {
            connection.connectDidFail(error: error)
        }
    }

    /// A loop error while setting up a connect, as the connect's error.
    private static func wrapped<Value>(_ body: () throws(EventLoopError) -> Value) throws(NetError) -> Value {
        do {
            return try body()
        } catch .shutDown {
            throw .loopShutDown
        } catch .libevent(let call, let code), .system(let call, let code) {
            throw .system(call, code)
        } catch {
            throw .system("\(error)", 0)
        }
    }

    /// The socket became writable: the connect is done, one way or the other.
    private func connectBecameWritable(_ address: SocketAddress) {
        guard case .connecting = machine.state else { return }
        if let error = Socket.connectResult(fd, address) {
            connectDidFail(error: error)
        } else {
            connectDidFinish()
        }
    }

    /// The connect finished: start the connection and hand it out. Loop thread only.
    private func connectDidFinish() {
        writeWatch?.cancel()  // the connect's watch; output makes its own when it needs one
        writeWatch = nil
        isWriteWatchActive = false
        _ = machine.connected()
        start()
        guard needsHandshake, !machine.isClosed else {
            resumeConnectWaiter(nil)
            return
        }
        // The connect's timer still runs: it bounds the handshake too.
        startHandshake { [unowned self] error in resumeConnectWaiter(error) }
    }

    /// Hands the connection (or the error) to whoever awaits the connect. Loop thread only.
    private func resumeConnectWaiter(_ error: NetError?) {
        connectTimer?.cancel()
        connectTimer = nil
        guard let waiter = connectWaiter else { return }
        connectWaiter = nil
        if let error {
            waiter.resume(returning: .failure(error))
        } else {
            waiter.resume(returning: machine.isClosed ? .failure(.loopShutDown) : .success(self))
        }
    }

    /// Fails the connect with `error` and ends the (never handed out) connection. Loop thread only.
    func connectDidFail(error: NetError) {
        if isHandshaking {  // the connect's timer fired during the transport's handshake
            let waiter = connectWaiter
            connectWaiter = nil
            waiter?.resume(returning: .failure(error))
            end(transport.handshakeFailure("the handshake did not finish within the connect's timeout").reason)
            return
        }
        guard case .connecting = machine.state else { return }
        if let waiter = connectWaiter {
            connectWaiter = nil
            waiter.resume(returning: .failure(error))
        }
        perform(machine.failed(.failed(0)))
    }
}

/// A client's security layer (TLS) to run its handshake once the connect is done, naming `serverName`.
struct SecureConnect: Sendable {
    let layer: any TransportSecurity
    let serverName: String

    /// - Throws: ``NetError/tls(_:)`` for a server's layer.
    init(_ layer: any TransportSecurity, serverName: String) throws(NetError) {
        guard !layer.isServer else { throw .tls("connect needs a client TLSContext (this one is a server's)") }
        self.layer = layer
        self.serverName = serverName
    }
}
