import LoopKit
import LoopKitNet

/// TLS connects, and what a connection over a ``TLSTransport`` can tell of its session. The connection
/// itself does not know TLS: it drives its transport's handshake and read-ahead (`Transport`); these look
/// through the transport.
extension Connection {
    /// Connects to a numeric address (IPv4, IPv6 or a Unix-domain socket) from a connection on `loop`,
    /// with TLS when `tls` is given.
    ///
    /// - Parameters:
    ///   - address: Where to connect.
    ///   - loop: The loop the connection will live on.
    ///   - options: The connection's settings.
    ///   - timeout: How long the connect and the TLS handshake may take. Default 10 seconds.
    ///   - tls: A client ``TLSContext``: the connection is returned once the handshake is done and the
    ///     server's certificate verified. Nil: plain TCP, as `connect(to:on:options:timeout:)`.
    ///   - serverName: The name sent as SNI and that the server's certificate must carry; nil: the
    ///     address itself (its certificate must then name the IP address).
    /// - Returns: The open connection.
    /// - Throws: ``NetError/connectionRefused(_:)``, ``NetError/connectTimedOut``,
    ///   ``NetError/loopShutDown``, ``NetError/tls(_:)`` (a failed handshake, a certificate that does
    ///   not verify, with OpenSSL's reason; a server's context), ``NetError/system(_:_:)`` for other socket
    ///   errors.
    ///
    /// Safe from any thread. The corresponding system call is a non-blocking `connect`.
    public static func connect(
        to address: SocketAddress, on loop: EventLoop, options: ConnectionOptions = .init(),
        timeout: Duration = .seconds(10), tls: TLSContext?, serverName: String? = nil
    ) async throws(NetError) -> Connection {
        try await connect(to: address, on: loop, options: options, timeout: timeout, security: tls, serverName: serverName)
    }

    /// Resolves `host` (off the loop's thread, with the system resolver), then connects to `host:port`
    /// from a connection on `loop`, trying each address in the resolver's order until one answers, with
    /// TLS when `tls` is given.
    ///
    /// - Parameters:
    ///   - host: A host name or numeric address.
    ///   - port: The port, 1 to 65535.
    ///   - loop: The loop the connection will live on.
    ///   - options: The connection's settings.
    ///   - timeout: How long resolution, connect and TLS handshake together may take. Default 10 seconds.
    ///   - tls: A client ``TLSContext``; `host` is then sent as SNI and must be named by the server's
    ///     certificate. Nil: plain TCP, as `connect(host:port:on:options:timeout:)`.
    /// - Returns: The open connection.
    /// - Throws: ``NetError/nameResolutionFailed(host:reason:)`` besides what
    ///   ``connect(to:on:options:timeout:tls:serverName:)`` throws; ``NetError/invalidAddress(_:)`` for a bad port.
    ///
    /// Safe from any thread. The corresponding C call is `getaddrinfo`, on a Dispatch queue.
    public static func connect(
        host: String, port: Int, on loop: EventLoop, options: ConnectionOptions = .init(),
        timeout: Duration = .seconds(10), tls: TLSContext?
    ) async throws(NetError) -> Connection {
        try await connect(host: host, port: port, on: loop, options: options, timeout: timeout, security: tls)
    }

    /// The TLS layer of the connection's transport; nil for a plain connection.
    private var tlsTransport: TLSTransport? { transport as? TLSTransport }

    /// What the TLS handshake agreed on (version, ALPN, the peer's certificate); nil for a plain
    /// connection. Call on the loop's thread.
    public var tlsInfo: TLSConnectionInfo? {
        checkThread()
        guard let session = tlsTransport?.session, !isHandshaking else { return nil }
        return TLSConnectionInfo(version: session.version, applicationProtocol: session.applicationProtocol,
                                 peerCertificate: session.peerCertificate, peerSubject: session.peerSubject)
    }

    /// The ALPN protocol the TLS handshake agreed on (`"http/1.1"`); nil for a plain connection, before
    /// the handshake is done, or when the peers agreed on none (one side offered no ALPN).
    /// See ``TLSConfiguration/applicationProtocols``.
    ///
    /// Call on the loop's thread. The corresponding OpenSSL call is `SSL_get0_alpn_selected`.
    public var applicationProtocol: String? {
        checkThread()
        guard let tls = tlsTransport, !isHandshaking else { return nil }
        return tls.session.applicationProtocol
    }

    /// TLS records this connection has written (each `SSL_write` that succeeded writes one); 0 for a plain
    /// connection. For tests of the write path. Call on the loop's thread.
    package var tlsRecordsWritten: Int {
        checkThread()
        return tlsTransport?.session.recordsWritten ?? 0
    }

    /// Bytes this connection copied to let small writes share a TLS record; 0 for a plain connection. For
    /// tests of the write path. Call on the loop's thread.
    package var tlsBytesCoalesced: Int {
        checkThread()
        return tlsTransport?.session.bytesCoalesced ?? 0
    }
}
