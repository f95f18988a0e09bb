import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension TCPConnection {
    /// Connects to a numeric address (IPv4, IPv6 or a Unix-domain socket) from a connection on `loop`.
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
    /// Safe from any thread. The corresponding libevent call is `bufferevent_socket_connect`.
    public static func connect(
        to address: SocketAddress, on loop: EventLoop, options: ConnectionOptions = .init(),
        timeout: Duration = .seconds(10)
    ) async throws(NetError) -> TCPConnection {
        try await start(on: loop, options: options, timeout: timeout, target: address) { buffers throws(NetError) in
            try buffers.connect(to: address)
            return nil
        }
    }

    /// Resolves `host` (off the loop's thread's critical path, with libevent's asynchronous evdns, which
    /// reads `/etc/hosts` and `/etc/resolv.conf`), then connects to `host:port` from a connection on `loop`.
    /// A numeric host skips resolution.
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
    /// Safe from any thread. The corresponding libevent call is `bufferevent_socket_connect_hostname`.
    public static func connect(
        host: String, port: Int, on loop: EventLoop, options: ConnectionOptions = .init(),
        timeout: Duration = .seconds(10)
    ) async throws(NetError) -> TCPConnection {
        guard (1...65_535).contains(port) else { throw .invalidAddress("port \(port) is out of range 1...65535") }
        let numeric: SocketAddress?
        do {
            numeric = try SocketAddress(ipAddress: host, port: port)
        } catch {
            numeric = nil  // not a numeric address: a name, resolved below (its failures are thrown there)
        }
        if let numeric {
            return try await connect(to: numeric, on: loop, options: options, timeout: timeout)
        }
        return try await start(on: loop, options: options, timeout: timeout, target: nil) { buffers throws(NetError) in
            let resolver = try LibEventResolver(base: loop.eventBase)
            do throws(NetError) {
                try buffers.connect(toHost: host, port: port, resolver: resolver)
            } catch {
                resolver.free()
                throw error
            }
            return resolver
        }
    }

    private static func start(
        on loop: EventLoop, options: ConnectionOptions, timeout: Duration, target: SocketAddress?,
        _ begin: @escaping (LibEventBuffers) throws(NetError) -> LibEventResolver?
    ) async throws(NetError) -> TCPConnection {
        let begin = UncheckedSendableBox(begin)
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<TCPConnection, NetError>, Never>) in
            let work: @Sendable () -> Void = {
                do throws(NetError) {
                    let buffers = try LibEventBuffers.socket(base: loop.eventBase, fd: -1)
                    let connection = TCPConnection(loop: loop, buffers: buffers, isSocket: true, connected: false, options: options)
                    connection.remoteAddress = target
                    if let reason = connection.closeReason {  // the loop began shutting down
                        continuation.resume(returning: .failure(reason == .shutDown ? .loopShutDown : .connectionClosed(reason)))
                        return
                    }
                    connection.connectWaiter = continuation
                    let timer = LibEventTimer(base: loop.eventBase) { [unowned connection] in
                        connection.connectDidFail(error: .connectTimedOut)
                    }
                    timer.arm(after: timeout)
                    connection.connectTimer = timer
                    do throws(NetError) {
                        connection.resolver = try begin.value(buffers)
                    } catch {
                        connection.connectDidFail(error: error)
                    }
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            if loop.isCurrent {
                work()
            } else {
                do { try loop.enqueue(work) } catch { continuation.resume(returning: .failure(.loopShutDown)) }
            }
        }
        return try result.get()
    }

    /// The connect finished: start the connection and hand it out. Loop thread only.
    func connectDidFinish() {
        connectTimer?.free()
        connectTimer = nil
        _ = machine.connected()
        if let buffers { remoteAddress = NetSocket.remoteAddress(of: buffers.fd) ?? remoteAddress }
        start()
        if let waiter = connectWaiter {
            connectWaiter = nil
            waiter.resume(returning: .success(self))
        }
        releaseResolver()
    }

    /// Frees the name resolver in the loop's next drain: never inside evdns's own callback, which may be
    /// on the stack now. Loop thread only.
    func releaseResolver() {
        guard let resolver else { return }
        self.resolver = nil
        let box = UncheckedSendableBox(resolver)
        do {
            try loop.enqueueCleanup { box.value.free() }
        } catch {
            resolver.free()  // the loop has finished shutting down: no evdns callback can be on the stack
        }
    }

    /// The connect failed with a socket error (or a resolution error). Loop thread only.
    func connectDidFail(code: Int32) {
        if let message = buffers?.resolutionError {
            connectDidFail(error: .nameResolutionFailed(host: remoteAddress?.host ?? "host", reason: message))
            return
        }
        switch code {
        case ECONNREFUSED, ENOENT:
            connectDidFail(error: remoteAddress.map { .connectionRefused($0) } ?? .system("connect", code))
        case EACCES, EPERM:
            connectDidFail(error: .permissionDenied("cannot connect to \(remoteAddress.map(String.init(describing:)) ?? "host")"))
        case ETIMEDOUT:
            connectDidFail(error: .connectTimedOut)
        default:
            connectDidFail(error: .system("connect", code))
        }
    }

    /// Fails the connect with `error` and ends the (never handed out) connection. Loop thread only.
    func connectDidFail(error: NetError) {
        if let waiter = connectWaiter {
            connectWaiter = nil
            waiter.resume(returning: .failure(error))
        }
        perform(machine.failed(.failed(0)))
    }
}

extension TCPConnection {
    /// Two connections joined in memory on `loop` (a libevent bufferevent pair): what one writes the
    /// other reads, with the same watermarks, backpressure and close reasons as sockets (no socket
    /// options, no timeouts except the idle timeout). Callbacks are deferred to the loop's next pass, so a
    /// test drives them iteration by iteration. `LoopKitTesting`'s `InMemoryConnectionPair` is the public face.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `bufferevent_pair_new`.
    package static func makeInMemoryPair(on loop: EventLoop, options: ConnectionOptions) throws(NetError) -> (TCPConnection, TCPConnection) {
        precondition(loop.isCurrent, "makeInMemoryPair(on:options:) called off the loop's thread")
        let (first, second) = try LibEventBuffers.pair(base: loop.eventBase)
        var pairOptions = options
        pairOptions.readTimeout = nil
        pairOptions.writeTimeout = nil
        let a = TCPConnection(loop: loop, buffers: first, isSocket: false, connected: true, options: pairOptions)
        let b = TCPConnection(loop: loop, buffers: second, isSocket: false, connected: true, options: pairOptions)
        return (a, b)
    }
}
