import LoopKit

/// What a connection over a ``TLSTransport`` can tell of its session. The connection itself does not
/// know TLS: it drives its transport's handshake and read-ahead (``Transport``); these look through the
/// transport.
extension Connection {
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
