import HTTPTypes

/// The lifecycle of one HTTP/1.1 connection, as a state machine whose answers are actions.
///
/// `idle → readingHead → (readingBody →) responding → idle …`, or `→ closing` when the connection must
/// not be reused. A streaming route's handler starts at the head: `readingHead → streaming → responding`,
/// and a response that ends before the body did goes `streaming → lingering` (RFC 9112 §9.3's close). The connection (``HTTPConnection``) feeds it what happened (parser events, a finished
/// response, a timeout tick, a shutdown) and performs the action it returns; the state machine itself
/// does no I/O, so every keep-alive and close decision lives here.
struct HTTPConnectionStateMachine {
    /// Where the connection is.
    enum State: Equatable {
        /// Between requests on a kept-alive connection (the idle timeout applies).
        case idle
        /// Bytes of a request head have arrived (the head timeout applies).
        case readingHead
        /// The head is parsed, the body is arriving (the body timeout applies).
        case readingBody
        /// A streaming route's handler runs while its body is still arriving; `keepAlive` is the
        /// request's wish (the body timeout applies, measured from the last progress).
        case streaming(keepAlive: Bool)
        /// A handler or a streamed body is running; parsing is paused so responses stay in order.
        case responding(keepAlive: Bool)
        /// No more requests: close once the output is flushed.
        case closing
        /// The response went out before the request's body ended: the sending side is shut, and what the
        /// client still sends is read and dropped until it closes (so the response is not lost to a reset).
        case lingering
        /// Upgraded to a WebSocket after a `101`: no more HTTP; the socket serves the connection.
        case upgraded
        /// Closed.
        case closed
    }

    /// What the connection must do.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Write `100 Continue`.
        case sendContinue
        /// Run the handler for the request whose head and body are complete.
        case dispatch
        /// Answer this status with `Connection: close`, then close after flushing.
        case refuse(HTTPResponse.Status)
        /// Go on parsing the bytes already received (the next pipelined request).
        case resumeParsing
        /// Close after flushing what is written.
        case closeAfterFlush
        /// Shut the sending side after flushing, and drop what arrives until the client closes.
        case linger
        /// Close now, dropping unsent output.
        case closeNow
    }

    private(set) var state: State = .idle
    /// Set by ``shutdownRequested()``: the current response is the last.
    private(set) var isDraining = false
    /// The keep-alive wish of the request being read.
    private var requestKeepAlive = true
    /// A streaming route's client waits for `100 Continue` before sending the body, and none went out.
    private var continueOwed = false

    /// Whether parsing may go on.
    var canParse: Bool {
        switch state {
        case .idle, .readingHead, .readingBody, .streaming: true
        case .responding, .closing, .lingering, .upgraded, .closed: false
        }
    }

    /// Whether the connection is between requests with nothing received.
    var isIdle: Bool { state == .idle }

    /// Bytes of a new request arrived while idle.
    mutating func bytesArrived() {
        if state == .idle { state = .readingHead }
    }

    /// The parser produced a head.
    mutating func headParsed(_ head: HTTPRequestHead) -> Action {
        requestKeepAlive = head.keepAlive
        state = .readingBody
        return head.expectsContinue && head.framing != .none ? .sendContinue : .none
    }

    /// A streaming route's head: its handler starts now, while the body is read. `100 Continue` waits
    /// for ``bodyWanted()``.
    mutating func streamingStarted(_ head: HTTPRequestHead) {
        requestKeepAlive = head.keepAlive
        state = .streaming(keepAlive: head.keepAlive && !isDraining)
        continueOwed = head.expectsContinue && head.framing != .none
    }

    /// A streaming route is about to read its body: its handler asked for the body, or is starting a
    /// streamed response (which may read it) while the body is unread. Answers ``Action/sendContinue``
    /// once per request when the client waits for it and the body is still to come (RFC 9110 §10.1.1:
    /// `100 Continue` before the final response); ``Action/none`` otherwise. The connection calls it
    /// before any final head, and never after one.
    mutating func bodyWanted() -> Action {
        guard continueOwed, case .streaming = state else { return .none }
        continueOwed = false
        return .sendContinue
    }

    /// Whether a streaming route's body is still arriving.
    var isStreamingBody: Bool {
        if case .streaming = state { return true }
        return false
    }

    /// Whether the connection drops what it reads (``State/lingering``).
    var isLingering: Bool { state == .lingering }

    /// The parser reached the end of the request: run its handler (a streaming route's runs already).
    mutating func requestComplete() -> Action {
        if case .streaming(let keepAlive) = state {
            state = .responding(keepAlive: keepAlive && !isDraining)
            return .none
        }
        state = .responding(keepAlive: requestKeepAlive && !isDraining)
        return .dispatch
    }

    /// Whether the response being written keeps the connection open.
    var responseKeepsAlive: Bool {
        switch state {
        case .responding(let keepAlive), .streaming(let keepAlive): keepAlive && !isDraining
        default: false
        }
    }

    /// The response cannot keep the connection (an HTTP/1.0 body without a length): close after it.
    mutating func closeAfterThisResponse() {
        switch state {
        case .responding: state = .responding(keepAlive: false)
        case .streaming: state = .streaming(keepAlive: false)
        default: break
        }
    }

    /// The response is completely written.
    mutating func responseFinished() -> Action {
        if case .streaming = state {
            state = .lingering
            return .linger
        }
        guard case .responding = state else { return .none }
        if responseKeepsAlive {
            state = .idle
            return .resumeParsing
        }
        state = .closing
        return .closeAfterFlush
    }

    /// The request broke a rule: answer its status and close.
    mutating func parseFailed(_ error: HTTPRequestError) -> Action {
        guard canParse else { return .none }
        state = .closing
        return .refuse(error.status)
    }

    /// A timeout of the current state expired.
    mutating func timedOut() -> Action {
        switch state {
        case .idle:
            state = .closing
            return .closeNow
        case .readingHead, .readingBody:
            state = .closing
            return .refuse(.requestTimeout)
        case .lingering, .streaming:
            state = .closing
            return .closeNow
        case .responding, .closing, .upgraded, .closed:
            return .none
        }
    }

    /// The server is shutting down gracefully: close when idle, else after the current response.
    mutating func shutdownRequested() -> Action {
        isDraining = true
        if state == .idle {
            state = .closing
            return .closeNow
        }
        return .none
    }

    /// The `101` went out: the connection leaves HTTP (no parsing, no HTTP timeouts).
    mutating func upgraded() {
        state = .upgraded
    }

    /// The peer closed or the socket failed.
    mutating func transportClosed() {
        state = .closed
    }
}
