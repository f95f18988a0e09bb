import LoopKit

extension Connection {
    /// Whether the connection's transport moves bytes only after a handshake (TLS). Loop thread only.
    var needsHandshake: Bool { transport.needsHandshake }

    /// Starts the transport's handshake (``Transport/needsHandshake``); `completion` runs once, on the
    /// loop: with nil when the handshake is done, or with the error once the connection has ended (a
    /// failed handshake, its ``Transport/handshakeTimeout``, the peer leaving). Loop thread only.
    func startHandshake(completion: @escaping (NetError?) -> Void) {
        precondition(transport.needsHandshake, "startHandshake on a connection whose transport has no handshake")
        let handshakeTimeout = transport.handshakeTimeout
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

    /// The transport is ready: take the handshake a step further. Loop thread only.
    func continueHandshake() {
        guard isHandshaking, !machine.isClosed else { return }
        switch transport.handshake() {
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
            // The transport may have read the peer's first bytes with the handshake's last (TLS read-ahead):
            // readiness will not announce them, so they are read in the next iteration (unless the
            // completion read them).
            if !machine.isClosed, transport.hasUnannouncedInput, wantsToRead { queueUnannouncedRead() }
        case .wantRead:
            if isWriteWatchActive, output.isEmpty {
                isWriteWatchActive = false
                writeWatch?.pause()
            }
        case .wantWrite:
            watchForWritable()
        case .failed(let description):
            handshakeFailed(description)
        }
    }

    /// The handshake failed, or did not finish in time: the completion is told, and the connection ends
    /// with the reason its transport gives.
    func handshakeFailed(_ description: String) {
        guard isHandshaking, !machine.isClosed else { return }
        let failure = transport.handshakeFailure(description)
        let completion = extras?.handshakeCompletion
        extras?.handshakeCompletion = nil
        completion?(failure.error)
        end(failure.reason)
    }
}
