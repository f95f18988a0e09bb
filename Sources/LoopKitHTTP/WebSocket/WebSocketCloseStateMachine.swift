/// The close handshake of one WebSocket (RFC 6455 §5.5.1, §7), as a state machine whose answers are
/// actions: it does no I/O.
///
/// `open → closeSent → closed` when this side closes first (it waits for the peer's close frame, then
/// the server closes the TCP connection first, §7.1.1); `open → closed` when the peer closes first (its
/// code is echoed) or breaks a rule (a close frame with the failure's code, then the TCP connection is
/// closed: §7.1.7); any state `→ closed` when the TCP connection ends.
struct WebSocketCloseStateMachine {
    /// Where the handshake is.
    enum State: Equatable {
        /// Messages flow both ways.
        case open
        /// This side sent its close frame and waits for the peer's; nothing more is sent.
        case closeSent
        /// The handshake is over (or failed); the TCP connection is closing or closed.
        case closed
    }

    /// What the socket must do.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Send a close frame with this code (nil: an empty close frame) and reason; then close the TCP
        /// connection when `thenCloseTransport`.
        case sendClose(WebSocketCloseCode?, reason: String, thenCloseTransport: Bool)
        /// Close the TCP connection (gracefully: what is queued is sent first).
        case closeTransport
        /// Drop the TCP connection now.
        case abortTransport
    }

    private(set) var state: State = .open
    /// The code and reason of the close: the peer's, or this side's when it closed first or failed.
    private(set) var code: WebSocketCloseCode?
    private(set) var reason = ""
    /// A close frame was received (the handshake completed, from either side).
    private(set) var receivedClose = false

    /// Whether messages may be sent.
    var canSend: Bool { state == .open }

    /// This side closes with `code` and `reason`.
    mutating func closeRequested(_ code: WebSocketCloseCode, reason: String) -> Action {
        guard state == .open else { return .none }
        state = .closeSent
        self.code = code
        self.reason = reason
        return .sendClose(code, reason: reason, thenCloseTransport: false)
    }

    /// The peer's close frame arrived (`code` nil when it carried none): echo it, or end the handshake.
    mutating func closeReceived(_ code: WebSocketCloseCode?, reason: String) -> Action {
        receivedClose = true
        switch state {
        case .open:
            state = .closed
            self.code = code ?? .noStatusReceived
            self.reason = reason
            return .sendClose(code, reason: "", thenCloseTransport: true)
        case .closeSent:
            state = .closed
            return .closeTransport
        case .closed:
            return .none
        }
    }

    /// The peer broke a rule: fail the connection with the violation's code.
    mutating func failed(_ violation: WebSocketViolation) -> Action {
        switch state {
        case .open:
            state = .closed
            code = violation.code
            reason = violation.reason
            return .sendClose(violation.code, reason: violation.reason, thenCloseTransport: true)
        case .closeSent:
            state = .closed
            return .closeTransport
        case .closed:
            return .none
        }
    }

    /// The peer did not answer in time (a keep-alive ping, or this side's close frame).
    mutating func timedOut() -> Action {
        switch state {
        case .open:
            state = .closed
            code = .goingAway
            reason = "ping timeout"
            return .sendClose(.goingAway, reason: "ping timeout", thenCloseTransport: true)
        case .closeSent:
            state = .closed
            return .abortTransport
        case .closed:
            return .none
        }
    }

    /// The TCP connection ended; returns whether the close handshake had completed (a clean close).
    mutating func transportClosed() -> Bool {
        state = .closed
        if !receivedClose && code == nil { code = .abnormalClosure }
        return receivedClose
    }
}
