/// The lifecycle of one connection, as a value: events go in, the actions to perform come out.
///
/// The connection performs the actions (system calls, resuming waiters, calling handlers); this type
/// only decides. It guarantees the rule the whole layer rests on: ``Action/finish(_:)`` is returned
/// exactly once per connection, whatever happens and in whatever order, and never before the end.
struct ConnectionStateMachine {
    /// Where a connection is in its life.
    enum State: Equatable {
        /// A client connection waiting for its connect (and name resolution) to finish.
        case connecting
        /// Connected. `inputEnded`: the peer sent end of file (or the input was given up);
        /// `output`: how far the local sending side has been shut down.
        case open(inputEnded: Bool, output: OutputState)
        /// Closing gracefully: buffered output is being flushed, then the connection ends with the reason.
        case closing(CloseReason)
        /// Ended; nothing more happens.
        case closed(CloseReason)
    }

    /// The local sending side.
    enum OutputState: Equatable {
        /// Writes are accepted.
        case open
        /// ``Connection/shutdownOutput()`` was called: buffered bytes go out, then the socket's sending
        /// side is shut down.
        case shuttingDown
        /// Shut down: the peer has read end of file.
        case shut
    }

    /// What the connection must do.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Make sure buffered output is being written; the machine waits for ``outputDrained()``.
        case flushOutput
        /// Shut the socket's sending side now (the output is empty).
        case shutOutput
        /// Tell the reader that no more bytes will come (the connection stays open for writing).
        case endInput
        /// End the connection with this reason: free the socket, resume every waiter, call the close
        /// handlers. Returned once.
        case finish(CloseReason)
        /// As ``finish(_:)``, and make the kernel send a reset rather than a FIN.
        case finishWithReset(CloseReason)
    }

    private(set) var state: State

    /// A machine for an accepted connection (open) or a client connection (connecting).
    init(connected: Bool) {
        state = connected ? .open(inputEnded: false, output: .open) : .connecting
    }

    /// Whether writes are accepted now.
    var acceptsWrites: Bool {
        if case .open(_, .open) = state { return true }
        return false
    }

    /// Whether the connection has ended.
    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// Whether the peer's end of file has been seen (or the connection is ending).
    var inputEnded: Bool {
        switch state {
        case .connecting: false
        case .open(let ended, _): ended
        case .closing, .closed: true
        }
    }

    /// The reason the connection ended or is ending, if it is.
    var endReason: CloseReason? {
        switch state {
        case .closing(let reason), .closed(let reason): reason
        default: nil
        }
    }

    /// The connect finished.
    mutating func connected() -> Action {
        guard case .connecting = state else { return .none }
        state = .open(inputEnded: false, output: .open)
        return .none
    }

    /// ``Connection/close()``: flush, then end.
    mutating func closeRequested(outputPending: Bool) -> Action {
        switch state {
        case .connecting:
            state = .closed(.closedLocally)
            return .finish(.closedLocally)
        case .open:
            return endGracefully(.closedLocally, outputPending: outputPending)
        case .closing, .closed:
            return .none
        }
    }

    /// ``Connection/abort()``: drop the output, reset the peer.
    mutating func abortRequested() -> Action {
        if case .closed = state { return .none }
        state = .closed(.aborted)
        return .finishWithReset(.aborted)
    }

    /// A failure (reset, broken pipe, timeout, shutdown): end now, output dropped.
    mutating func failed(_ reason: CloseReason) -> Action {
        if case .closed = state { return .none }
        state = .closed(reason)
        return .finish(reason)
    }

    /// ``Connection/shutdownOutput()``.
    mutating func shutdownOutputRequested(outputPending: Bool) -> Action {
        guard case .open(let inputEnded, .open) = state else { return .none }
        if outputPending {
            state = .open(inputEnded: inputEnded, output: .shuttingDown)
            return .flushOutput
        }
        return shutOutputNow(inputEnded: inputEnded)
    }

    /// The peer sent end of file.
    ///
    /// - Parameters:
    ///   - allowsHalfClosure: Keep the connection open for writing (it ends when this side closes).
    ///   - inputPending: Unread bytes remain; the end is acted on once ``inputDrained()`` reports them read.
    ///   - outputPending: Output remains to be flushed.
    mutating func peerEnded(allowsHalfClosure: Bool, inputPending: Bool, outputPending: Bool) -> Action {
        guard case .open(false, let output) = state else { return .none }
        state = .open(inputEnded: true, output: output)
        if inputPending { return .none }
        return afterInputEnded(allowsHalfClosure: allowsHalfClosure, outputPending: outputPending)
    }

    /// The reader consumed the last buffered byte after the peer's end of file.
    mutating func inputDrained(allowsHalfClosure: Bool, outputPending: Bool) -> Action {
        guard case .open(true, _) = state else { return .none }
        return afterInputEnded(allowsHalfClosure: allowsHalfClosure, outputPending: outputPending)
    }

    /// The output has been written out completely.
    mutating func outputDrained() -> Action {
        switch state {
        case .closing(let reason):
            state = .closed(reason)
            return .finish(reason)
        case .open(let inputEnded, .shuttingDown):
            return shutOutputNow(inputEnded: inputEnded)
        default:
            return .none
        }
    }

    private mutating func afterInputEnded(allowsHalfClosure: Bool, outputPending: Bool) -> Action {
        guard case .open(_, let output) = state else { return .none }
        if output == .shut {
            state = .closed(.peerClosed)
            return .finish(.peerClosed)
        }
        if allowsHalfClosure || output == .shuttingDown { return .endInput }
        return endGracefully(.peerClosed, outputPending: outputPending)
    }

    private mutating func shutOutputNow(inputEnded: Bool) -> Action {
        if inputEnded {  // both directions are done: the connection ends here
            state = .closed(.closedLocally)
            return .finish(.closedLocally)
        }
        state = .open(inputEnded: inputEnded, output: .shut)
        return .shutOutput
    }

    private mutating func endGracefully(_ reason: CloseReason, outputPending: Bool) -> Action {
        if outputPending {
            state = .closing(reason)
            return .flushOutput
        }
        state = .closed(reason)
        return .finish(reason)
    }
}
