import LoopKit

extension TCPConnection {
    /// What the TLS handshake agreed on (version, ALPN, the peer's certificate); nil for a plain
    /// connection. Call on the loop's thread.
    public var tlsInfo: TLSConnectionInfo? {
        checkThread()
        guard let session = tls?.session, !isHandshaking else { return nil }
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
        guard let tls, !isHandshaking else { return nil }
        return tls.session.applicationProtocol
    }

    /// TLS records this connection has written (each `SSL_write` that succeeded writes one); 0 for a plain
    /// connection. For tests of the write path. Call on the loop's thread.
    package var tlsRecordsWritten: Int {
        checkThread()
        return tls?.session.recordsWritten ?? 0
    }

    /// Bytes this connection copied to let small writes share a TLS record; 0 for a plain connection. For
    /// tests of the write path. Call on the loop's thread.
    package var tlsBytesCoalesced: Int {
        checkThread()
        return tls?.session.bytesCoalesced ?? 0
    }

    /// The transport of a new connection: `inner`, with TLS over it when `context` is given (a client's
    /// names `serverName`). Loop thread only.
    /// - Throws: ``NetError/tls(_:)`` when OpenSSL cannot make the session.
    static func transport(over inner: Transport, tls context: TLSContext?, serverName: String?,
                          on loop: EventLoop) throws(NetError) -> Transport {
        guard let context else { return inner }
        return try TLSTransport(over: inner, context: context.handle, serverName: serverName,
                                applicationProtocols: context.applicationProtocolsOverride, scratch: .of(loop))
    }

    /// Starts the TLS handshake of a connection made over a ``TLSTransport``; `completion` runs once, on
    /// the loop: with nil when the handshake is done, or with the error once the connection has ended (a
    /// failed handshake, its timeout, the peer leaving). Loop thread only.
    func startHandshake(completion: @escaping (NetError?) -> Void) {
        guard let tls else { preconditionFailure("startHandshake on a connection without TLS") }
        let handshakeTimeout = tls.session.context.handshakeTimeout
        isHandshaking = true
        ensuredExtras.handshakeCompletion = completion
        do {
            extras?.handshakeTimer = try loop.schedule(after: handshakeTimeout) { [weak self] in
                self?.handshakeFailed("the handshake did not finish within \(handshakeTimeout)")
            }
        } catch {
            // The loop is shutting down: its shutdown ends this connection and tells the completion.
        }
        continueHandshake()
    }

    /// The socket is ready: take the handshake a step further. Loop thread only.
    func continueHandshake() {
        guard let tls, isHandshaking, !machine.isClosed else { return }
        switch tls.handshake() {
        case .done:
            isHandshaking = false
            extras?.handshakeTimer?.cancel()
            extras?.handshakeTimer = nil
            if output.isEmpty, isWriteWatchActive {
                isWriteWatchActive = false
                writeWatch?.pause()
            }
            let completion = extras?.handshakeCompletion
            extras?.handshakeCompletion = nil
            completion?(nil)
            // Read ahead may have taken the peer's first records with the handshake's last: the socket will
            // not announce them, so they are read in the next iteration (unless the completion read them).
            if !machine.isClosed, tls.hasPendingBytes, wantsToRead { queueTLSRead() }
        case .wantRead:
            if isWriteWatchActive, output.isEmpty {
                isWriteWatchActive = false
                writeWatch?.pause()
            }
        case .wantWrite:
            watchForWritable()
        case .failed(let reason):
            handshakeFailed(reason)
        }
    }

    private func handshakeFailed(_ reason: String) {
        guard isHandshaking, !machine.isClosed else { return }
        let completion = extras?.handshakeCompletion
        extras?.handshakeCompletion = nil
        completion?(.tls(reason))
        end(.tls(reason))
    }
}
