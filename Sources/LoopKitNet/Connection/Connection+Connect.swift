import Dispatch
import LoopKit

extension Connection {
    /// Connects to a numeric address (IPv4, IPv6 or a Unix-domain socket) from a connection on `loop`,
    /// with TLS when `tls` is given.
    ///
    /// - Parameters:
    ///   - address: Where to connect.
    ///   - loop: The loop the connection will live on.
    ///   - options: The connection's settings.
    ///   - timeout: How long the connect (and the TLS handshake) may take. Default 10 seconds.
    ///   - tls: A client ``TLSContext``: the connection is returned once the handshake is done and the
    ///     server's certificate verified. Nil (default): plain TCP.
    ///   - serverName: The name sent as SNI and that the server's certificate must carry; nil: the
    ///     address itself (its certificate must then name the IP address).
    /// - Returns: The open connection.
    /// - Throws: ``NetError/connectionRefused(_:)``, ``NetError/connectTimedOut``,
    ///   ``NetError/loopShutDown``, ``NetError/tls(_:)`` (a failed handshake, a certificate that does
    ///   not verify, with OpenSSL's reason), ``NetError/system(_:_:)`` for other socket errors.
    ///
    /// Safe from any thread. The corresponding system call is a non-blocking `connect`.
    public static func connect(
        to address: SocketAddress, on loop: EventLoop, options: ConnectionOptions = .init(),
        timeout: Duration = .seconds(10), tls: TLSContext? = nil, serverName: String? = nil
    ) async throws(NetError) -> Connection {
        let deadline = loop.clockNanoseconds &+ UInt64(max(0, timeout / .nanoseconds(1)))
        let secure = try tls.map { context throws(NetError) in
            guard context.role == .client else { throw .tls("connect needs a client TLSContext (this one is a server's)") }
            return SecureConnect(context: context, serverName: serverName ?? address.host)
        }
        return try await connect(toAny: [address], on: loop, options: options, deadline: deadline, tls: secure)
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
    ///   - timeout: How long resolution, connect and TLS handshake together may take. Default 10 seconds.
    ///   - tls: A client ``TLSContext``; `host` is then sent as SNI and must be named by the server's
    ///     certificate. Nil (default): plain TCP.
    /// - Returns: The open connection.
    /// - Throws: ``NetError/nameResolutionFailed(host:reason:)`` besides what
    ///   ``connect(to:on:options:timeout:tls:serverName:)`` throws; ``NetError/invalidAddress(_:)`` for a bad port.
    ///
    /// Safe from any thread. The corresponding C call is `getaddrinfo`, on a Dispatch queue.
    public static func connect(
        host: String, port: Int, on loop: EventLoop, options: ConnectionOptions = .init(),
        timeout: Duration = .seconds(10), tls: TLSContext? = nil
    ) async throws(NetError) -> Connection {
        guard (1...65_535).contains(port) else { throw .invalidAddress("port \(port) is out of range 1...65535") }
        let numeric: SocketAddress?
        do {
            numeric = try SocketAddress(ipAddress: host, port: port)
        } catch {
            numeric = nil  // not a numeric address: a name, resolved below (its failures are thrown there)
        }
        if let numeric { return try await connect(to: numeric, on: loop, options: options, timeout: timeout, tls: tls, serverName: host) }
        let deadline = loop.clockNanoseconds &+ UInt64(max(0, timeout / .nanoseconds(1)))
        let resolved = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<[SocketAddress], NetError>, Never>) in
                DispatchQueue.global().async { continuation.resume(returning: Socket.resolve(host: host, port: port)) }
            }
        } onCancel: {}
        let addresses = try resolved.get()
        guard loop.clockNanoseconds < deadline else { throw .connectTimedOut }
        let secure = try tls.map { context throws(NetError) in
            guard context.role == .client else { throw .tls("connect needs a client TLSContext (this one is a server's)") }
            return SecureConnect(context: context, serverName: host)
        }
        return try await connect(toAny: addresses, on: loop, options: options, deadline: deadline, tls: secure)
    }

    /// Tries `addresses` in order until one connects; throws the last failure.
    private static func connect(
        toAny addresses: [SocketAddress], on loop: EventLoop, options: ConnectionOptions, deadline: UInt64,
        tls: SecureConnect?
    ) async throws(NetError) -> Connection {
        var lastError = NetError.connectTimedOut
        for address in addresses {
            let now = loop.clockNanoseconds
            guard now < deadline else { throw .connectTimedOut }
            let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Connection, NetError>, Never>) in
                let work: @Sendable () -> Void = {
                    startConnect(to: address, on: loop, options: options, tls: tls,
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
        to address: SocketAddress, on loop: EventLoop, options: ConnectionOptions, tls: SecureConnect?,
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
            transport = try TLSTransport.wrapping(SocketTransport(fd: fd), in: tls?.context, serverName: tls?.serverName, on: loop)
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

/// A client TLS handshake to run once the connect is done.
struct SecureConnect: Sendable {
    let context: TLSContext
    let serverName: String
}
