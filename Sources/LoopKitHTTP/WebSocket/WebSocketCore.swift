import LoopKit
import LoopKitNet

/// The engine of one ``WebSocket``: reads frames out of the TCP connection (lent in place by its read
/// callback), answers pings, runs the close handshake, and hands messages to the callback or the
/// `messages` reader.
///
/// Loop-confined and not `Sendable`: it lives inside the socket's `LoopBound`, so only the loop's
/// thread reaches it.
///
/// The state touched on every message (the parser, the assembler, the close state machine, the
/// queue, the ending) is `@exclusivity(unchecked)`: one thread, and no access to it overlaps another
/// (each mutation ends before the action it decides on runs), so the runtime's dynamic exclusivity
/// checks would only cost time.
final class WebSocketCore: ConnectionHandler {
    let tcp: Connection
    let configuration: WebSocketConfiguration
    @exclusivity(unchecked) var parser: WebSocketFrameParser
    @exclusivity(unchecked) var assembler: WebSocketMessageAssembler
    @exclusivity(unchecked) var closing = WebSocketCloseStateMachine()
    /// The extension negotiated (permessage-deflate), if any: it transforms messages both ways.
    let negotiated: WebSocketNegotiatedExtension?

    /// The callback reader, if one is set (then nothing is queued).
    var messageHandler: ((WebSocketMessage) -> Void)?
    var closeHandlers: [(WebSocketError?) -> Void] = []
    /// Messages waiting for the `messages` reader, and their bytes.
    @exclusivity(unchecked) private var queue: [WebSocketMessage] = []
    private var queueHead = 0
    private var queuedBytes = 0
    /// The `messages` reader, suspended.
    private var waiter = SingleConsumerWaiter<WebSocketMessage, WebSocketError>()
    /// Set once the TCP connection has ended: nil for a clean close handshake, else the error.
    @exclusivity(unchecked) private(set) var ending: WebSocketError??
    /// Why this side failed the connection (a violation, a ping timeout), reported at the end.
    private var failure: WebSocketError?
    /// True while `receive` runs.
    private var isReceiving = false
    /// The deadlines the server's sweep checks (``checkDeadlines(_:now:)``), on the loop's clock
    /// (``EventLoop/clockNanoseconds``): the next keep-alive ping, the pong it waits for, and the peer's
    /// close frame after this side's. No timer of the socket's own.
    private var pingDue: UInt64?
    private var pongDue: UInt64?
    private var closeDue: UInt64?
    /// Set when a server's upgrade made this socket (nil on a client's).
    var served: ServedWebSocket?

    init(tcp: Connection, configuration: WebSocketConfiguration, extension negotiated: WebSocketNegotiatedExtension?) {
        self.tcp = tcp
        self.configuration = configuration
        self.negotiated = negotiated
        // An extension claims RSV1 (the one reserved bit an extension of LoopKitHTTP's uses).
        parser = WebSocketFrameParser(maxFrameSize: configuration.maxFrameSize, allowsRSV1: negotiated != nil)
        assembler = WebSocketMessageAssembler(maxMessageSize: configuration.maxMessageSize)
    }

    /// Starts the keep-alive pings, once the engine is the TCP connection's handler in the HTTP
    /// connection's place (``WebSocketUpgrader``): the first falls due one ping interval from now.
    func startKeepAlivePings() {
        if let interval = configuration.pingInterval {
            pingDue = tcp.loop.clockNanoseconds &+ interval.clampedNanoseconds
        }
    }

    func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int {
        receive(bytes)
    }

    func connection(_ connection: Connection, closedWith reason: CloseReason) {
        transportClosed()
        served = nil  // lets go of the handle
    }

    /// The server drains (graceful shutdown): the close handshake, with 1001.
    func connectionShouldDrain(_ connection: Connection) {
        guard !tcp.isClosed else { return }
        close(code: .goingAway, reason: "server shutting down")
    }

    /// The server's sweep (the loop's registry, every interval; the server picks one fine enough for
    /// its WebSocket routes' timeouts): resets the connection when the client has stopped taking its
    /// output or its close cannot drain (``OutputDeadlines``); drops it when the peer's close frame did
    /// not come within ``WebSocketConfiguration/closeTimeout``; closes it with 1001 when a keep-alive
    /// ping's pong did not come within ``WebSocketConfiguration/pingTimeout``; sends the keep-alive ping
    /// that fell due. Each deadline is noticed at the first tick after it passed (up to one interval late).
    func checkDeadlines(_ connection: Connection, now instant: EventLoopClock.Instant) {
        guard !tcp.isClosed, let context = served?.context else { return }
        let now = instant.nanoseconds
        if OutputDeadlines.cutIfStuck(tcp, now: now, context: context) { return }  // closed: `served` is gone
        guard pingDue != nil || pongDue != nil || closeDue != nil else { return }
        if let due = closeDue, now >= due {
            closeDue = nil
            perform(closing.timedOut())
        } else if let due = pongDue, now >= due {
            pongDue = nil
            if failure == nil, closing.state == .open { failure = .pingTimeout }
            perform(closing.timedOut())
        } else if let due = pingDue, now >= due, let interval = configuration.pingInterval?.clampedNanoseconds {
            // The pings keep their grid; one that fell a whole interval behind is due an interval from now.
            let next = due &+ interval
            pingDue = next > now ? next : now &+ interval
            sendKeepAlivePing(now: now)
        }
    }

    // MARK: Reading

    /// Whether more frames may be parsed: a callback reader, or room in the queue.
    private var hasRoom: Bool { messageHandler != nil || queuedBytes < configuration.inboundBufferLimit }

    /// Parses and handles the frames the bytes hold; returns how many bytes were consumed.
    private func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard ending == nil, closing.state != .closed else { return bytes.count }  // after the end: drop
        isReceiving = true
        defer { isReceiving = false }
        var offset = 0
        while offset < bytes.count {
            guard hasRoom else { return offset }  // the reader is behind: backpressure
            do throws(WebSocketViolation) {
                let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
                if let whole = try parser.parseWhole(rest) {
                    offset += whole.consumed
                    try handle(whole)
                } else {
                    let (event, consumed) = try parser.parse(rest)
                    offset += consumed
                    guard case .frame(let frame) = event else { return offset }
                    try handle(frame)
                }
            } catch {
                fail(error)
                return bytes.count
            }
            if closing.state == .closed { return bytes.count }
        }
        return offset
    }

    /// One frame: control frames at once (even between fragments), data frames into the assembler.
    private func handle(_ frame: WebSocketFrame) throws(WebSocketViolation) {
        switch frame.opcode {
        case .close:
            try closeFrameArrived(frame.payload)
        case .ping:
            if closing.canSend { writeFrame(.pong, frame.payload) }
        case .pong:
            pongDue = nil
        default:
            guard closing.state == .open else { return }  // after this side's close: dropped
            if let message = try assembler.append(frame, extension: negotiated) { deliver(message) }
        }
    }

    /// One frame lent whole, its payload still masked in the read buffer: a data frame goes to the
    /// assembler as it is (unmasked once, into the message), a control frame as ``handle(_:)-(WebSocketFrame)``.
    private func handle(_ whole: WebSocketFrameParser.WholeFrame) throws(WebSocketViolation) {
        if whole.head.opcode.isControl {
            try handle(whole.head.frame(unmasking: whole.payload))
        } else if closing.state == .open,
                  let message = try assembler.append(whole.head, maskedPayload: whole.payload, extension: negotiated) {
            deliver(message)
        }
    }

    /// The peer's close frame: its code must be one a close frame may carry and its reason UTF-8.
    private func closeFrameArrived(_ payload: [UInt8]) throws(WebSocketViolation) {
        var code: WebSocketCloseCode?
        var reason = ""
        if !payload.isEmpty {
            guard payload.count >= 2 else { throw .protocolError("close frame with a one-byte payload") }
            let received = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
            guard received.isValidOnTheWire else { throw .protocolError("close code \(received.rawValue) may not be sent") }
            var validator = UTF8Validator()
            let text = Array(payload[2...])
            guard validator.validate(text), validator.isComplete else { throw .invalidUTF8("close reason is not UTF-8") }
            code = received
            reason = String(decoding: text, as: UTF8.self)
        }
        perform(closing.closeReceived(code, reason: reason))
    }

    private func deliver(_ message: WebSocketMessage) {
        if let messageHandler {
            messageHandler(message)
        } else if let consumer = waiter.unpark() {
            consumer.resume(returning: message)
        } else {
            queue.append(message)
            queuedBytes += message.byteCount
        }
    }

    /// The next message for the `messages` reader: one queued, the end, or nil when it must wait.
    func takeMessage() -> Result<WebSocketMessage?, WebSocketError>? {
        if queueHead < queue.count {
            let message = queue[queueHead]
            queue[queueHead] = .binary([])
            queueHead += 1
            if queueHead == queue.count {
                queue.removeAll(keepingCapacity: true)
                queueHead = 0
            }
            let wasFull = !hasRoom
            queuedBytes -= message.byteCount
            if wasFull, hasRoom { readBufferedInput() }
            return .success(message)
        }
        if let ending { return ending.map { .failure($0) } ?? .success(nil) }
        return nil
    }

    /// Parks the suspended `messages` reader until a message or the end.
    func waitForMessage(_ continuation: UnsafeContinuation<Result<WebSocketMessage?, WebSocketError>, Never>) {
        precondition(messageHandler == nil, "WebSocket messages are read by one consumer at a time")
        waiter.park(continuation, for: "WebSocket.messages")
    }

    /// Sets the callback reader; it first gets what is queued.
    func setMessageHandler(_ handler: @escaping (WebSocketMessage) -> Void) {
        precondition(!waiter.isWaiting, "WebSocket messages are read by one consumer at a time")
        messageHandler = handler
        while queueHead < queue.count, case .success(let message?)? = takeMessage() { handler(message) }
        readBufferedInput()
    }

    /// The reader made room: parse what the socket delivered and was left unconsumed.
    private func readBufferedInput() {
        guard !isReceiving, ending == nil else { return }
        _ = tcp.consumeBufferedInput { bytes in receive(bytes) }
    }

    // MARK: Writing

    /// The error a send gets once the socket cannot send.
    var closedError: WebSocketError {
        if let failure { return failure }
        if case .some(.some(let error)) = ending { return error }
        return .closed(closing.code ?? .noStatusReceived, reason: closing.reason)
    }

    /// Sends a message as one frame.
    func write(_ message: WebSocketMessage) throws(WebSocketError) {
        guard closing.canSend, ending == nil else { throw closedError }
        switch message {
        case .text(let text):
            var text = text
            text.withUTF8 { writeMessage(.text, UnsafeRawBufferPointer($0)) }
        case .binary(let bytes):
            bytes.withUnsafeBytes { writeMessage(.binary, $0) }
        }
    }

    /// A message as one frame: transformed by the negotiated extension (RSV1 set) when it takes it.
    private func writeMessage(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        if let negotiated, let transformed = negotiated.outbound(payload) {
            writeFrame(opcode, transformed, rsv1: true)
        } else {
            writeFrame(opcode, payload)
        }
    }

    /// Writes one unmasked frame.
    func writeFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], rsv1: Bool = false) {
        payload.withUnsafeBytes { writeFrame(opcode, $0, rsv1: rsv1) }
    }

    /// Writes one unmasked frame: its header, built on the stack, and the payload go out together (one
    /// `writev` when the socket takes them, no copy of the payload then).
    func writeFrame(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer, rsv1: Bool = false) {
        var header: (UInt64, UInt64) = (0, 0)
        let written = withUnsafeMutableBytes(of: &header) { buffer in
            let count = WebSocketFrameEncoder.writeHeader(into: buffer, fin: true, rsv1: rsv1, opcode: opcode, length: payload.count)
            return Result { () throws(NetError) in try tcp.write(copying: UnsafeRawBufferPointer(rebasing: buffer[..<count]), payload) }
        }
        if case .failure = written {
            // Closing or closed: the close handler ends the socket.
        }
    }

    // MARK: Closing

    /// This side closes: its close frame goes out, and the peer's is awaited for the close timeout.
    func close(code: WebSocketCloseCode, reason: String) {
        precondition(code.isValidOnTheWire, "WebSocket close code \(code) may not be sent in a close frame")
        perform(closing.closeRequested(code, reason: reason))
    }

    /// The peer broke a rule.
    private func fail(_ violation: WebSocketViolation) {
        if failure == nil, closing.state != .closed { failure = .protocolViolation(violation.code, reason: violation.reason) }
        perform(closing.failed(violation))
    }

    private func perform(_ action: WebSocketCloseStateMachine.Action) {
        switch action {
        case .none:
            break
        case .sendClose(let code, let reason, let thenCloseTransport):
            writeFrame(.close, WebSocketFrameEncoder.closePayload(code: code, reason: reason))
            if thenCloseTransport {
                // A violation: the peer may still be sending (a 4 MiB message refused at 1 MiB). Half-close
                // and drain, so the close frame is read before any reset (RFC 6455 §7.1.1).
                tcp.closeAfterDrainingInput()
            } else {
                closeDue = tcp.loop.clockNanoseconds &+ configuration.closeTimeout.clampedNanoseconds
            }
        case .closeTransport:
            tcp.close()
        case .abortTransport:
            tcp.abort()
        }
    }

    /// A keep-alive ping fell due at `now`: send it, and close if its pong does not come within the ping
    /// timeout (none is sent while an earlier one waits for its pong).
    private func sendKeepAlivePing(now: UInt64) {
        guard closing.canSend, pongDue == nil else { return }
        writeFrame(.ping, [])
        pongDue = now &+ configuration.pingTimeout.clampedNanoseconds
    }

    /// The TCP connection ended: every waiter and close handler is told, once.
    private func transportClosed() {
        guard ending == nil else { return }
        let clean = closing.transportClosed()
        let error: WebSocketError? = failure ?? (clean ? nil : .connectionLost)
        ending = .some(error)
        pingDue = nil
        pongDue = nil
        closeDue = nil
        if queueHead == queue.count { waiter.unpark()?.resume(with: error.map { .failure($0) } ?? .success(nil)) }
        let handlers = closeHandlers
        closeHandlers = []
        messageHandler = nil
        for handler in handlers { handler(error) }
    }

    /// Adds a close handler; on a socket that has ended it runs in the loop's next iteration, as a TCP
    /// connection's does (at once when the loop refuses work, shutting down: still once).
    func addCloseHandler(_ handler: @escaping (WebSocketError?) -> Void) {
        if let ending {
            let call = UncheckedSendableBox(handler)
            do {
                try tcp.loop.enqueue { call.value(ending) }
            } catch {
                handler(ending)
            }
        } else {
            closeHandlers.append(handler)
        }
    }
}

extension WebSocketMessage {
    /// The payload's size in bytes (UTF-8 for text).
    var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let bytes): bytes.count
        }
    }
}
