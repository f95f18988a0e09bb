import LoopKit

/// A byte stream to a peer (TCP or Unix-domain socket, or an in-memory pair in tests) that lives on
/// one `EventLoop`.
///
/// Two ways to handle it, both on the loop's thread:
/// - **Callbacks** (the lean path): ``onRead(_:)`` lends the handler the contiguous unread bytes and
///   takes how many it consumed; `write(_:)` and friends append to the output, which is sent
///   when the callback returns; ``onWritable(_:)`` and ``onClose(_:)`` report the rest.
/// - **Async**: ``inbound`` is an `AsyncSequence` of ``Bytes`` chunks and `try await write(_:)` suspends
///   while the output is above the write high-water mark. Run the handler in a `Task` whose executor
///   preference is the connection's loop (the listener's `handler:` variants do this), so no call hops.
///
/// **Backpressure**: reading from the socket stops while ``ConnectionOptions/readHighWaterMark`` bytes
/// wait unread; writers are told (``isWritable``) or suspended above
/// ``ConnectionOptions/writeHighWaterMark``. A peer that never reads, or a handler that never consumes,
/// costs no more memory than the watermarks.
///
/// **Ending**: the connection ends exactly once, with a ``CloseReason``: every suspended reader and
/// writer is resumed and every ``onClose(_:)`` handler runs, once.
///
/// **Thread rule**: a connection is confined to its loop: call every method and property on the loop's
/// thread (checked with a precondition), except ``loop`` and ``options``, which are safe from any thread.
/// It is `Sendable` so that a `Task` running on that loop may hold it; the unchecked conformance stands
/// for the loop-confinement check every entry point makes.
public final class TCPConnection: @unchecked Sendable {
    /// The loop the connection lives on. Safe from any thread.
    public let loop: EventLoop
    /// The watermarks, timeouts and socket options. Safe from any thread.
    public let options: ConnectionOptions

    /// The peer's address (nil for an in-memory pair). Call on the loop's thread.
    public internal(set) var remoteAddress: SocketAddress?
    /// This end's address (nil for an in-memory pair). Call on the loop's thread.
    public internal(set) var localAddress: SocketAddress?

    var buffers: LibEventBuffers?
    let isSocket: Bool
    var machine: ConnectionStateMachine
    var readHandler: ((UnsafeRawBufferPointer) -> Int)?
    var writableHandler: (() -> Void)?
    var inputEndedHandler: (() -> Void)?
    var closeHandlers: [(CloseReason) -> Void] = []
    var readWaiter: UnsafeContinuation<Result<Bytes?, NetError>, Never>?
    var writeWaiters: [UnsafeContinuation<Result<Void, NetError>, Never>] = []
    var connectWaiter: UnsafeContinuation<Result<TCPConnection, NetError>, Never>?
    var connectTimer: LibEventTimer?
    var resolver: LibEventResolver?
    var idleTimer: LibEventTimer?
    var lastActivity: UInt64 = 0
    /// True while a read handler runs: writes are flushed when it returns, freeing waits until then.
    var inReadDispatch = false
    var flushDeferred = false
    var releaseDeferred = false
    var aboveHighWater = false
    var readingPausedByUser = false
    /// Reading was stopped here because the input reached the read high-water mark (libevent stops too,
    /// but an in-memory pair keeps offering the same bytes unless reading is disabled).
    var readingSuspendedAtHighWater = false
    /// The input count the read handler was last lent without consuming anything: it is not lent the
    /// same bytes again until more arrive.
    var unconsumedCount = 0
    /// The connection's own reference, held while it is open (libevent's callbacks are unretained).
    var keepAlive: Unmanaged<TCPConnection>?

    /// Wraps a bufferevent. Loop thread only.
    init(loop: EventLoop, buffers: LibEventBuffers, isSocket: Bool, connected: Bool, options: ConnectionOptions) {
        self.loop = loop
        self.options = options
        self.buffers = buffers
        self.isSocket = isSocket
        machine = ConnectionStateMachine(connected: connected)
        keepAlive = Unmanaged.passRetained(self)
        buffers.route(to: Unmanaged.passUnretained(self).toOpaque())
        buffers.setWatermarks(readHigh: options.readHighWaterMark, writeLow: options.writeLowWaterMark)
        // The loop's shutdown ends the connection (.shutDown); a loop already shutting down ends it now.
        let registered = loop.addShutdownObserver(ObjectIdentifier(self)) { [weak self] in self?.end(.shutDown) }
        guard registered else {
            end(.shutDown)
            return
        }
        if connected { start() }
    }

    /// Starts reading and the timeouts. Loop thread only.
    func start() {
        guard let buffers else { return }
        if isSocket {
            let fd = buffers.fd
            if remoteAddress?.family != .unix {
                NetSocket.configure(fd, noDelay: options.noDelay, keepAlive: options.keepAlive)
            }
            if remoteAddress == nil { remoteAddress = NetSocket.remoteAddress(of: fd) }
            if localAddress == nil { localAddress = NetSocket.localAddress(of: fd) }
        }
        buffers.setTimeouts(read: options.readTimeout, write: options.writeTimeout)
        buffers.enable(reading: true, writing: !isSocket)
        // A socket bufferevent starts with writing enabled, which would wait for the socket to be
        // writable before every send (two epoll_ctl calls and a poll per message): writes go straight to
        // the socket instead (flush()), and writing is enabled only while the socket is full.
        if isSocket, buffers.outputCount == 0 { buffers.disable(writing: true) }
        if let idle = options.idleTimeout {
            lastActivity = libEventCachedTime(loop.eventBase)
            let timer = LibEventTimer(base: loop.eventBase) { [unowned self] in self.idleTimerFired() }
            timer.arm(after: idle)
            idleTimer = timer
        }
    }

    @inline(__always)
    func checkThread(_ function: StaticString = #function) {
        precondition(loop.isCurrent, "TCPConnection.\(function) called off its loop's thread")
    }

    // MARK: Callbacks

    /// Sets the handler for inbound bytes: the lean, zero-copy path.
    ///
    /// Each time bytes arrive, `handler` is lent every unread byte, contiguous (libevent's input buffer,
    /// made contiguous in place), and returns how many it consumed, from 0 to the count it was given. The
    /// rest stays buffered and is lent again, after the bytes that arrive next. The pointer is valid only
    /// during the call. Writes made inside the handler are sent together when it returns. If bytes are
    /// already buffered, the handler is called with them in the loop's next iteration.
    ///
    /// Consuming nothing is backpressure: once ``ConnectionOptions/readHighWaterMark`` bytes wait,
    /// the socket is no longer read. Use ``consumeBufferedInput(_:)`` to come back to them later.
    ///
    /// - Parameter handler: Called on the loop's thread with the unread bytes; returns the count consumed.
    ///
    /// Call on the loop's thread.
    public func onRead(_ handler: @escaping (UnsafeRawBufferPointer) -> Int) {
        checkThread()
        readHandler = handler
        if let buffers, buffers.inputCount > 0 {
            do {
                try loop.enqueue { [self] in if self.readHandler != nil { self.dispatchRead() } }
            } catch {
                // Refused: the loop is shutting down and its shutdown ends this connection; no read is due.
            }
        }
    }

    /// Sets the handler called when output that went above ``ConnectionOptions/writeHighWaterMark`` has
    /// drained to ``ConnectionOptions/writeLowWaterMark``: the time to write more.
    ///
    /// Call on the loop's thread.
    public func onWritable(_ handler: @escaping () -> Void) {
        checkThread()
        writableHandler = handler
    }

    /// Sets the handler called when the peer has ended its side and every byte before the end has been
    /// read, while the connection stays open for writing (``ConnectionOptions/allowsHalfClosure``).
    ///
    /// Call on the loop's thread.
    public func onInputEnded(_ handler: @escaping () -> Void) {
        checkThread()
        inputEndedHandler = handler
    }

    /// Adds a handler called once, when the connection ends, with the reason. Handlers run in the order
    /// they were added; on a connection that has already ended, the handler runs in the loop's next
    /// iteration. After the handlers run, the connection drops every handler it holds.
    ///
    /// Call on the loop's thread.
    public func onClose(_ handler: @escaping (CloseReason) -> Void) {
        checkThread()
        if case .closed(let reason) = machine.state {
            let call = UncheckedSendableBox(handler)
            do {
                try loop.enqueue { call.value(reason) }
            } catch {
                handler(reason)  // the loop refuses work (shutting down): tell the handler now, still once
            }
            return
        }
        closeHandlers.append(handler)
    }

    /// Lends the buffered unread bytes to `body` now, outside a read callback, and drains what it consumed.
    ///
    /// - Parameter body: Gets the contiguous unread bytes (possibly empty); returns the count consumed.
    /// - Returns: The count consumed.
    ///
    /// Call on the loop's thread. The corresponding libevent calls are `evbuffer_pullup` and `evbuffer_drain`.
    @discardableResult
    public func consumeBufferedInput(_ body: (UnsafeRawBufferPointer) -> Int) -> Int {
        checkThread()
        guard let buffers else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let consumed = buffers.consumeInput(body)
        if consumed > 0 { inputWasConsumed() }
        return consumed
    }

    /// Bytes read from the socket and not yet consumed. Call on the loop's thread.
    public var bufferedInputCount: Int {
        checkThread()
        return buffers?.inputCount ?? 0
    }

    /// Bytes written and not yet sent. Call on the loop's thread.
    public var bufferedOutputCount: Int {
        checkThread()
        return buffers?.outputCount ?? 0
    }

    /// Stops reading from the socket until ``resumeReading()``; bytes already read stay buffered.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `bufferevent_disable`.
    public func pauseReading() {
        checkThread()
        readingPausedByUser = true
        buffers?.disable(reading: true)
    }

    /// Reads from the socket again after ``pauseReading()``.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `bufferevent_enable`.
    public func resumeReading() {
        checkThread()
        readingPausedByUser = false
        if !machine.inputEnded, !readingSuspendedAtHighWater { buffers?.enable(reading: true) }
    }

    /// Whether the connection has ended. Call on the loop's thread.
    public var isClosed: Bool {
        checkThread()
        return machine.isClosed
    }

    /// The reason the connection ended, or nil while it is open. Call on the loop's thread.
    public var closeReason: CloseReason? {
        checkThread()
        if case .closed(let reason) = machine.state { return reason }
        return nil
    }

    // MARK: Writing

    /// Whether a write now stays at or below ``ConnectionOptions/writeHighWaterMark`` and the connection
    /// accepts writes. Call on the loop's thread.
    public var isWritable: Bool {
        checkThread()
        guard machine.acceptsWrites, let buffers else { return false }
        return buffers.outputCount <= options.writeHighWaterMark
    }

    /// Appends `bytes` to the output without copying them: libevent holds the storage by reference
    /// until the bytes are sent (chunks under 256 bytes are copied, which is cheaper).
    ///
    /// Writes are never refused for being above the high-water mark; check ``isWritable`` or use the
    /// async variant to respect it. Outside a read handler the bytes are sent at once (as much as the
    /// socket takes); inside one, when the handler returns.
    ///
    /// - Parameter bytes: The bytes to send.
    /// - Throws: ``NetError/connectionClosed(_:)`` once the connection is closing, closed, or its output
    ///   was shut down.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `evbuffer_add_reference`.
    public func write(_ bytes: Bytes) throws(NetError) {
        try append(bytes)
    }

    func append(_ bytes: Bytes, _ function: StaticString = #function) throws(NetError) {
        let buffers = try writableBuffers(function)
        if bytes.count < 256 {
            try bytes.withUnsafeBytes { buffer throws(NetError) in try buffers.append(buffer) }
        } else {
            try buffers.appendReference(bytes)
        }
        didAppend(buffers)
    }

    /// Appends a copy of `buffer` to the output (one copy, into libevent's buffer; no allocation when the
    /// buffer's last chunk has room).
    ///
    /// - Parameter buffer: The bytes to send; only read during the call.
    /// - Throws: As `write(_:)`.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `evbuffer_add`.
    public func write(copying buffer: UnsafeRawBufferPointer) throws(NetError) {
        let buffers = try writableBuffers()
        try buffers.append(buffer)
        didAppend(buffers)
    }

    /// Appends the UTF-8 bytes of `string` (one copy).
    ///
    /// - Throws: As `write(_:)`.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `evbuffer_add`.
    public func write(_ string: String) throws(NetError) {
        try append(string)
    }

    func append(_ string: String, _ function: StaticString = #function) throws(NetError) {
        let buffers = try writableBuffers(function)
        var string = string
        let result = string.withUTF8 { utf8 in
            Result { () throws(NetError) in try buffers.append(UnsafeRawBufferPointer(utf8)) }
        }
        try result.get()
        didAppend(buffers)
    }

    /// Lets `body` write up to `capacity` bytes straight into the output buffer's free space: no
    /// intermediate buffer at all (how a response head is best serialised).
    ///
    /// - Parameters:
    ///   - capacity: The most bytes `body` may write.
    ///   - body: Writes from the start of the buffer and returns how many bytes it wrote.
    /// - Throws: As `write(_:)`.
    ///
    /// Call on the loop's thread. The corresponding libevent calls are `evbuffer_reserve_space` and
    /// `evbuffer_commit_space`.
    public func write(reservingCapacity capacity: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) throws(NetError) {
        let buffers = try writableBuffers()
        try buffers.appendInPlace(capacity: capacity, body)
        didAppend(buffers)
    }

    func writableBuffers(_ function: StaticString = #function) throws(NetError) -> LibEventBuffers {
        checkThread(function)
        guard machine.acceptsWrites, let buffers else {
            throw .connectionClosed(machine.endReason ?? .closedLocally)
        }
        return buffers
    }

    func didAppend(_ buffers: LibEventBuffers) {
        if buffers.outputCount > options.writeHighWaterMark { aboveHighWater = true }
        if inReadDispatch { flushDeferred = true } else { flush() }
    }

    /// Sends what the socket takes now; leaves the rest to libevent's write event. Socket only.
    func flush() {
        guard isSocket, let buffers else { return }
        if buffers.outputCount == 0 { outputDidDrain(); return }
        if buffers.isWriteEnabled { return }  // already waiting for the socket to be writable
        let result = buffers.writeOutputNow()
        if result < 0 {
            perform(machine.failed(CloseReason(errno: Int32(-result))))
            return
        }
        if result > 0 { touch() }
        if buffers.outputCount > 0 {
            buffers.enable(writing: true)
        } else {
            outputDidDrain()
        }
    }

    // MARK: Ending

    /// Shuts down the sending side once buffered output is sent: the peer reads end of file; this side
    /// keeps reading (half-close). Further writes throw.
    ///
    /// Call on the loop's thread. The corresponding system call is `shutdown(fd, SHUT_WR)`.
    public func shutdownOutput() {
        checkThread()
        perform(machine.shutdownOutputRequested(outputPending: (buffers?.outputCount ?? 0) > 0))
    }

    /// Closes gracefully: stops reading, sends the buffered output, then closes the socket; the
    /// connection ends with ``CloseReason/closedLocally``. Calling it again, or after the end, does nothing.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `bufferevent_free`, once flushed.
    public func close() {
        checkThread()
        perform(machine.closeRequested(outputPending: (buffers?.outputCount ?? 0) > 0))
    }

    /// Closes now: drops buffered output and resets the connection (`SO_LINGER` 0); the connection ends
    /// with ``CloseReason/aborted``. Does nothing after the end.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `bufferevent_free`.
    public func abort() {
        checkThread()
        perform(machine.abortRequested())
    }

    /// Ends the connection with `reason` (listener shutdown, loop shutdown). Loop thread only.
    func end(_ reason: CloseReason) {
        perform(machine.failed(reason))
    }

    func perform(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .flushOutput:
            if case .closing = machine.state {
                buffers?.disable(reading: true)
                buffers?.discardInput()
            }
            if isSocket { flush() }
        case .shutOutput:
            guard let buffers else { return }
            if isSocket { NetSocket.shutdownWrite(buffers.fd) } else { buffers.finishPairOutput() }
        case .endInput:
            if let waiter = readWaiter {
                readWaiter = nil
                waiter.resume(returning: .success(nil))
            }
            inputEndedHandler?()
        case .finish(let reason):
            finish(reason, reset: false)
        case .finishWithReset(let reason):
            finish(reason, reset: true)
        }
    }

    /// The one way a connection ends. Runs once (the state machine returns `finish` once).
    private func finish(_ reason: CloseReason, reset: Bool) {
        loop.removeShutdownObserver(ObjectIdentifier(self))
        idleTimer?.free()
        idleTimer = nil
        connectTimer?.free()
        connectTimer = nil
        releaseResolver()
        if let buffers {
            buffers.unroute()
            if !isSocket { buffers.finishPairOutput() }  // the partner reads end of file
            buffers.disable(reading: true, writing: true)
            if reset, isSocket { NetSocket.resetOnClose(buffers.fd) }
            if inReadDispatch { releaseDeferred = true } else { releaseBuffers() }
        }
        if let waiter = connectWaiter {
            connectWaiter = nil
            waiter.resume(returning: .failure(reason == .shutDown ? .loopShutDown : .connectionClosed(reason)))
        }
        if let waiter = readWaiter {
            readWaiter = nil
            waiter.resume(returning: reason.isClean ? .success(nil) : .failure(.connectionClosed(reason)))
        }
        let writers = writeWaiters
        writeWaiters = []
        for writer in writers {
            writer.resume(returning: reason.isClean ? .success(()) : .failure(.connectionClosed(reason)))
        }
        let handlers = closeHandlers
        closeHandlers = []
        readHandler = nil
        writableHandler = nil
        inputEndedHandler = nil
        for handler in handlers { handler(reason) }
        let retained = keepAlive
        keepAlive = nil
        retained?.release()
    }

    func releaseBuffers() {
        releaseDeferred = false
        buffers?.free()
        buffers = nil
    }

    // MARK: libevent callbacks (loop thread)

    /// Bytes arrived (input at or below the read high-water mark).
    func bufferDidRead() {
        touch()
        if let waiter = readWaiter {
            readWaiter = nil
            waiter.resume(returning: .success(takeInputChunk()))
        } else if readHandler != nil {
            dispatchRead()
        }
        suspendReadingAtHighWater()
    }

    func dispatchRead() {
        guard let handler = readHandler, let buffers else { return }
        let available = buffers.inputCount
        if available == unconsumedCount { return }  // nothing new since the handler declined these bytes
        inReadDispatch = true
        let consumed = buffers.consumeInput(handler)
        inReadDispatch = false
        if releaseDeferred { releaseBuffers(); return }
        unconsumedCount = consumed == 0 ? available : 0
        if flushDeferred {
            flushDeferred = false
            flush()
        }
        if consumed > 0 { inputWasConsumed() }
    }

    func suspendReadingAtHighWater() {
        guard let buffers, !readingSuspendedAtHighWater, buffers.inputCount >= options.readHighWaterMark else { return }
        readingSuspendedAtHighWater = true
        buffers.disable(reading: true)
    }

    /// Moves the unread input into a chunk (the one copy on the read path).
    func takeInputChunk() -> Bytes? {
        guard let buffers else { return nil }
        let chunk = buffers.takeInput(limit: options.readHighWaterMark)
        inputWasConsumed()
        return chunk
    }

    func inputWasConsumed() {
        unconsumedCount = 0
        if readingSuspendedAtHighWater, let buffers, buffers.inputCount < options.readHighWaterMark {
            readingSuspendedAtHighWater = false
            if !readingPausedByUser, !machine.inputEnded { buffers.enable(reading: true) }
        }
        guard machine.inputEnded, let buffers, buffers.inputCount == 0 else { return }
        perform(machine.inputDrained(allowsHalfClosure: options.allowsHalfClosure, outputPending: buffers.outputCount > 0))
    }

    /// The output drained to the write low-water mark.
    func bufferDidDrain() {
        guard let buffers else { return }
        touch()
        if isSocket, buffers.outputCount == 0 { buffers.disable(writing: true) }
        outputDidDrain()
    }

    func outputDidDrain() {
        guard let buffers else { return }
        let pending = buffers.outputCount
        if aboveHighWater, pending <= options.writeLowWaterMark {
            aboveHighWater = false
            let writers = writeWaiters
            writeWaiters = []
            for writer in writers { writer.resume(returning: .success(())) }
            writableHandler?()
        }
        if pending == 0 { perform(machine.outputDrained()) }
    }

    /// End of file, an error, a timeout, or a finished connect.
    func bufferDidReport(_ events: BufferEventEvents, errno code: Int32) {
        if events.contains(.connected) {
            connectDidFinish()
            return
        }
        if case .connecting = machine.state {
            connectDidFail(code: code)
            return
        }
        if events.contains(.endOfFile) {
            touch()
            guard let buffers else { return }
            let inputPending = readHandler == nil && buffers.inputCount > 0
            if readHandler != nil { buffers.discardInput() }
            perform(machine.peerEnded(
                allowsHalfClosure: options.allowsHalfClosure, inputPending: inputPending,
                outputPending: buffers.outputCount > 0
            ))
        } else if events.contains(.timeout) {
            perform(machine.failed(.timedOut(events.contains(.reading) ? .read : .write)))
        } else if events.contains(.error) {
            perform(machine.failed(CloseReason(errno: code)))
        }
    }

    // MARK: Timeouts

    /// Records traffic for the idle timeout.
    @inline(__always)
    func touch() {
        if idleTimer != nil { lastActivity = libEventCachedTime(loop.eventBase) }
    }

    private func idleTimerFired() {
        guard let idle = options.idleTimeout, let idleTimer else { return }
        let elapsed = libEventCachedTime(loop.eventBase) &- lastActivity
        let limit = UInt64(max(0, idle / .nanoseconds(1)))
        if elapsed >= limit {
            perform(machine.failed(.timedOut(.idle)))
        } else {
            idleTimer.arm(after: .nanoseconds(Int64(limit - elapsed)))
        }
    }

    deinit {
        // Only reached after finish() released the keep-alive reference, or for a connection whose set-up
        // failed before it was handed out.
        buffers?.unroute()
        buffers?.free()
    }
}

/// Carries a loop-confined value into a `@Sendable` job for the same loop.
///
/// Unchecked because the value never leaves the loop's thread: it is created there and the job runs there.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
