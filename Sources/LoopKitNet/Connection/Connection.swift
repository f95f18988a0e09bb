import LoopKit

/// A byte stream to a peer that lives on one `EventLoop`: a TCP or Unix-domain socket, a child process's
/// pipe (``ChildProcess/standardOutput``), or an in-memory pair in tests, each with or without TLS. What
/// moves the bytes is the connection's transport; everything described here is the same over each.
///
/// Called `TCPConnection` before it carried more than TCP; that name still works (``TCPConnection``).
///
/// Two ways to handle it, both on the loop's thread:
/// - **A handler** (the lean path): one ``ConnectionHandler`` at a time (``setHandler(_:)``) is lent the
///   contiguous unread bytes and returns how many it consumed, and hears of input ending, output
///   draining and the close; ``replaceHandler(_:)`` hands the connection to another (a protocol upgrade),
///   with the bytes already read. ``onRead(_:)`` and its siblings set closures as that one handler; `write(_:)` and friends queue output, and what a read handler writes is
///   sent with one `writev` when it returns; ``onWritable(_:)`` and ``onClose(_:)`` report the rest.
/// - **Async**: ``inbound`` is an `AsyncSequence` of ``Bytes`` chunks and `try await send(_:)` suspends
///   while the output is above the write high-water mark. Run the handler in a `Task` whose executor
///   preference is the connection's loop (the listener's `handler:` variants do this), so no call hops.
///
/// **The engine**: a transport moves the bytes (a non-blocking socket watched by the loop; an
/// in-memory partner in tests; a TLS session over either), and everything above it is the same.
/// On a socket: A connection with nothing left over reads
/// into a buffer its loop's connections share and is lent the bytes there; only what it leaves
/// unconsumed is kept in a buffer of its own, freed once consumed. Writes go straight to the socket
/// (`writev`); only what the kernel does not take is queued, with a writable watch until it drains.
///
/// **Backpressure, both ways, by default**: reading stops while ``ConnectionOptions/readHighWaterMark``
/// bytes wait unread, and while the unsent output is above ``ConnectionOptions/writeHighWaterMark``
/// (until it drains to ``ConnectionOptions/writeLowWaterMark``): on the connections a listener accepts,
/// unless ``ConnectionOptions/readsWhileOutputIsFull`` opts out (connections opened with `connect` keep
/// reading unless it opts in). So the obvious echo handler holds no more than the watermarks against a
/// peer that never reads. Async writers suspend above the high-water mark; callback writers can check ``isWritable``.
///
/// **Ending**: the connection ends exactly once, with a ``CloseReason``: every suspended reader and
/// writer is resumed and every ``onClose(_:)`` handler runs, once.
///
/// **Thread rule**: a connection is confined to its loop: call every method and property on the loop's
/// thread (checked with a precondition), except ``loop`` and ``options``, which are safe from any thread.
/// It is `Sendable` so that a `Task` running on that loop may hold it; the unchecked conformance stands
/// for the loop-confinement check every entry point makes. For the same reason the hot mutable state
/// skips the runtime's exclusivity checks (`@exclusivity(unchecked)`): one thread ever touches it.
public final class Connection: @unchecked Sendable {  // loop-confined: each entry point checks the thread
    /// The loop the connection lives on. Safe from any thread.
    public let loop: EventLoop
    /// What this connection shares with the others of its listener: options and role.
    let profile: ConnectionProfile

    /// The watermarks, timeouts and socket options. Safe from any thread.
    public var options: ConnectionOptions { profile.options }

    /// The socket the loop watches; -1 for a transport that announces its readiness, and once the
    /// connection has ended.
    var fd: Int32
    /// The loop watches the transport's descriptor (``TransportReadiness/watchedDescriptor``); otherwise
    /// the transport announces readiness itself, and there is nothing to watch.
    let watchesDescriptor: Bool
    /// What moves the bytes: the socket, the in-memory partner, or TLS over either. A constant, so the
    /// hot path calls it without retaining it.
    package let transport: Transport
    /// The loop's shared read buffer and write batch.
    let shared: LoopIOBuffers
    @exclusivity(unchecked) var machine: ConnectionStateMachine

    @exclusivity(unchecked) var input = InputBuffer()
    @exclusivity(unchecked) var output = OutputQueue()
    @exclusivity(unchecked) var readWatch: Watch?
    @exclusivity(unchecked) var writeWatch: Watch?
    /// Whether the read watch is active (mirrors it, to skip calls into the loop on the hot path).
    @exclusivity(unchecked) var isReadWatchActive = false
    @exclusivity(unchecked) var isWriteWatchActive = false

    /// The one handler: lent the bytes, told of input ending, output draining and the close.
    @exclusivity(unchecked) package internal(set) var handler: ConnectionHandler?
    /// The handler takes bytes (false for a closure handler with no read closure, and for none).
    @exclusivity(unchecked) var handlerReads = false
    /// The handler was replaced while it was lent bytes: what it left is offered to the new one.
    @exclusivity(unchecked) var handlerWasReplaced = false
    @exclusivity(unchecked) var closeHandlers: [(CloseReason) -> Void] = []
    /// The `inbound` consumer, while it waits for bytes.
    @exclusivity(unchecked) var readWaiter = SingleConsumerWaiter<Bytes, NetError>()
    @exclusivity(unchecked) var writeWaiters: [UnsafeContinuation<Result<Void, NetError>, Never>] = []
    /// A ``sendFile(_:from:count:)`` waiting for the queued output to drain and the socket to take more.
    @exclusivity(unchecked) var socketWaiter: UnsafeContinuation<Result<Void, NetError>, Never>?
    /// A read may leave input the transport will not announce (``Transport/readsAhead``): looked at
    /// after each read.
    let readsAhead: Bool
    /// The transport is a plain socket: the hot path reads and writes ``fd`` itself, with no dynamic call
    /// (what ``SocketTransport`` would do, inlined).
    let isPlainSocket: Bool
    /// The transport's handshake is under way: readiness drives it, not reads and writes.
    package internal(set) var isHandshaking = false
    /// The registry that keeps the connection (its listener endpoint's, or a server's): kept alive by it,
    /// and told when it ends.
    var registry: ConnectionRegistry?
    /// The connection registered a shutdown observer of its own (it was not accepted by a listener).
    let observesShutdown: Bool
    /// What few connections use (addresses asked for, timeouts, a connect, a handshake), kept
    /// apart so an idle connection does not carry it: created when first needed.
    @exclusivity(unchecked) var extras: ConnectionExtras?

    /// True while a read handler runs: its writes go into the loop's write batch, sent when it returns.
    @exclusivity(unchecked) var inReadDispatch = false
    /// The write batch is this connection's (its read handler runs and the batch was free).
    @exclusivity(unchecked) var ownsBatch = false
    /// Output went above the write high-water mark and has not drained to the low-water mark yet.
    @exclusivity(unchecked) var aboveHighWater = false
    /// Bytes sent so far (``bytesSent``): a write-progress deadline compares it between two looks.
    @exclusivity(unchecked) var sentByteCount: UInt64 = 0
    @exclusivity(unchecked) var readingPausedByUser = false
    /// A delivery of buffered input is queued for the next iteration (bytes an in-memory partner pushed,
    /// a read handler set when bytes were already buffered).
    @exclusivity(unchecked) var deliveryQueued = false
    /// The input count the read handler was last lent without consuming anything: it is not lent the
    /// same bytes again until more arrive.
    @exclusivity(unchecked) var declinedCount = 0

    /// The connection's own reference, held while it is open.
    var keepAlive: Unmanaged<Connection>?

    /// Wraps a socket. Loop thread only.
    ///
    /// `observesShutdown`: the connection ends itself when its loop shuts down; false for one a listener
    /// accepted, whose endpoint ends its connections then (one observer per listener, not per connection).
    convenience init(loop: EventLoop, fd: Int32, profile: ConnectionProfile, connected: Bool, observesShutdown: Bool = true) {
        self.init(loop: loop, transport: SocketTransport(fd: fd), profile: profile, connected: connected,
                  observesShutdown: observesShutdown)
    }

    /// Wraps a transport. Loop thread only.
    init(loop: EventLoop, transport: Transport, profile: ConnectionProfile, connected: Bool, observesShutdown: Bool = true) {
        self.loop = loop
        self.profile = profile
        self.transport = transport
        isPlainSocket = transport is SocketTransport
        fd = transport.descriptor
        watchesDescriptor = transport.readiness == .watchedDescriptor
        readsAhead = transport.readsAhead
        shared = LoopIOBuffers.of(loop)
        machine = ConnectionStateMachine(connected: connected)
        self.observesShutdown = observesShutdown
        keepAlive = Unmanaged.passRetained(self)
        guard observesShutdown else { return }
        // The loop's shutdown ends the connection (.shutDown); a loop already shutting down ends it now.
        let registered = loop.addShutdownObserver(ObjectIdentifier(self)) { [weak self] in self?.end(.shutDown) }
        guard registered else {
            end(.shutDown)
            return
        }
    }

    /// Starts reading and the timeouts of an open connection. Loop thread only.
    func start() {
        guard !machine.isClosed else { return }
        if profile.isTCP { Socket.configure(fd, noDelay: profile.options.noDelay, keepAlive: profile.options.keepAlive) }
        if watchesDescriptor {
            do {
                readWatch = try loop.watch(fd, for: .readable) { [unowned self] _ in self.transportIsReadable() }
                isReadWatchActive = true
            } catch {
                end(.failed(0))
                return
            }
        }
        startTimeouts()
    }

    @inline(__always)
    package func checkThread(_ function: StaticString = #function) {
        precondition(loop.isCurrent, "Connection.\(function) called off its loop's thread")
    }

    // MARK: Addresses

    /// The peer's address (nil for an in-memory pair). Call on the loop's thread.
    public var remoteAddress: SocketAddress? {
        checkThread()
        if cachedRemoteAddress == nil, fd >= 0 { cachedRemoteAddress = Socket.remoteAddress(of: fd) }
        return cachedRemoteAddress
    }

    /// This end's address (nil for an in-memory pair). Call on the loop's thread.
    public var localAddress: SocketAddress? {
        checkThread()
        if cachedLocalAddress == nil, fd >= 0 { cachedLocalAddress = Socket.localAddress(of: fd) }
        return cachedLocalAddress
    }

    // MARK: Handler

    /// Makes `handler` the connection's one handler (replacing any earlier one, closures set with
    /// ``onRead(_:)`` included). If bytes are already buffered, it is lent them in the loop's next
    /// iteration. The connection holds the handler until it ends, then lets go of it.
    ///
    /// Call on the loop's thread.
    public func setHandler(_ handler: ConnectionHandler) {
        checkThread()
        install(handler)
    }

    /// Hands the connection over to `handler` (a protocol upgrade): the current handler is released and
    /// called no more, and the new one is lent the bytes already read that the old one did not consume —
    /// in the loop's next iteration, or, when called from the old handler's
    /// ``ConnectionHandler/connection(_:received:)``, in the iteration after it returns (the bytes it
    /// leaves unconsumed included). Output already written stays queued, in order.
    ///
    /// Call on the loop's thread.
    public func replaceHandler(_ handler: ConnectionHandler) {
        checkThread()
        install(handler)
    }

    /// The one handler's installation: a new handler is offered every buffered byte.
    private func install(_ newHandler: ConnectionHandler) {
        guard !machine.isClosed else { return }
        handler = newHandler
        handlerReads = true
        handlerWasReplaced = inReadDispatch
        declinedCount = 0
        if !input.isEmpty { queueDelivery() }
    }

    /// The closure handler, made (in place of any other handler) when a closure is first set.
    private var callbacks: CallbackHandler {
        if let callbacks = handler as? CallbackHandler { return callbacks }
        let made = CallbackHandler()
        handler = made
        handlerReads = false
        return made
    }

    /// Sets the handler for inbound bytes: the lean, zero-copy path.
    ///
    /// Each time bytes arrive, `handler` is lent every unread byte, contiguous, and returns how many it
    /// consumed, from 0 to the count it was given. The rest stays buffered and is lent again, after the
    /// bytes that arrive next. The pointer is valid only during the call. Writes made inside the handler
    /// are sent together, with one `writev`, when it returns. If bytes are already buffered, the handler
    /// is called with them in the loop's next iteration.
    ///
    /// Consuming nothing is backpressure: once ``ConnectionOptions/readHighWaterMark`` bytes wait,
    /// the socket is no longer read. Use ``consumeBufferedInput(_:)`` to come back to them later.
    ///
    /// - Parameter handler: Called on the loop's thread with the unread bytes; returns the count consumed.
    ///
    /// Call on the loop's thread.
    public func onRead(_ handler: @escaping (UnsafeRawBufferPointer) -> Int) {
        checkThread()
        guard !machine.isClosed else { return }
        callbacks.read = handler
        handlerReads = true
        if !input.isEmpty { queueDelivery() }
    }

    /// Sets the handler called when output that went above ``ConnectionOptions/writeHighWaterMark`` has
    /// drained to ``ConnectionOptions/writeLowWaterMark``: the time to write more.
    ///
    /// Call on the loop's thread.
    public func onWritable(_ handler: @escaping () -> Void) {
        checkThread()
        guard !machine.isClosed else { return }
        callbacks.writable = handler
    }

    /// Sets the handler called when the peer has ended its side and every byte before the end has been
    /// read, while the connection stays open for writing (``ConnectionOptions/allowsHalfClosure``).
    ///
    /// Call on the loop's thread.
    public func onInputEnded(_ handler: @escaping () -> Void) {
        checkThread()
        guard !machine.isClosed else { return }
        callbacks.inputEnded = handler
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

    // MARK: Ending

    /// Shuts down the sending side once buffered output is sent: the peer reads end of file; this side
    /// keeps reading (half-close). Further writes throw.
    ///
    /// Call on the loop's thread. The corresponding system call is `shutdown(fd, SHUT_WR)`.
    public func shutdownOutput() {
        checkThread()
        perform(machine.shutdownOutputRequested(outputPending: hasPendingOutput))
    }

    /// Closes gracefully: stops reading, sends the buffered output, then closes the socket; the
    /// connection ends with ``CloseReason/closedLocally``. Calling it again, or after the end, does nothing.
    ///
    /// Call on the loop's thread. The corresponding system call is `close`, once the output is sent.
    public func close() {
        checkThread()
        perform(machine.closeRequested(outputPending: hasPendingOutput))
    }

    /// Closes now: drops buffered output and resets the connection (`SO_LINGER` 0); the connection ends
    /// with ``CloseReason/aborted``. Does nothing after the end.
    ///
    /// Call on the loop's thread. The corresponding system call is `close`.
    public func abort() {
        checkThread()
        perform(machine.abortRequested())
    }

    /// Ends the connection with `reason` (listener shutdown, loop shutdown, a failure). Loop thread only.
    func end(_ reason: CloseReason) {
        perform(machine.failed(reason))
    }

    func perform(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .flushOutput:
            if case .closing = machine.state {
                ensuredExtras.closingSince = loop.clockNanoseconds  // what a close-drain deadline counts from
                input.release()
                updateReadInterest()
            }
            if !inReadDispatch { writeOut() }  // a read handler's batch is sent when it returns
        case .shutOutput:
            transport.shutdownOutput()
        case .endInput:
            updateReadInterest()
            readWaiter.unpark()?.resume(with: .success(nil))
            handler?.connectionInputEnded(self)
        case .finish(let reason):
            finish(reason, reset: false)
        case .finishWithReset(let reason):
            finish(reason, reset: true)
        }
    }

    /// The one way a connection ends. Runs once (the state machine returns `finish` once).
    private func finish(_ reason: CloseReason, reset: Bool) {
        if observesShutdown { loop.removeShutdownObserver(ObjectIdentifier(self)) }
        timeouts?.timer?.cancel()
        timeouts = nil
        connectTimer?.cancel()
        connectTimer = nil
        readWatch?.cancel()
        readWatch = nil
        writeWatch?.cancel()
        writeWatch = nil
        isReadWatchActive = false
        isWriteWatchActive = false
        transport.close(reset: reset, notifyingPeer: !isHandshaking && reason.isClean)
        fd = -1
        output.removeAll()
        if !inReadDispatch { input.release() }  // a handler may be reading it: released when it returns
        if let completion = extras?.handshakeCompletion {
            extras?.handshakeCompletion = nil
            completion(reason == .shutDown ? .loopShutDown : .connectionClosed(reason))
        }
        extras?.handshakeTimer?.cancel()
        if extras?.lingering != nil { endLingering() }
        if let waiter = connectWaiter {
            connectWaiter = nil
            waiter.resume(returning: .failure(reason == .shutDown ? .loopShutDown : .connectionClosed(reason)))
        }
        readWaiter.unpark()?.resume(with: reason.isClean ? .success(nil) : .failure(.connectionClosed(reason)))
        if let waiter = socketWaiter {
            socketWaiter = nil
            waiter.resume(returning: .failure(.connectionClosed(reason)))
        }
        let writers = writeWaiters
        writeWaiters = []
        for writer in writers {
            writer.resume(returning: reason.isClean ? .success(()) : .failure(.connectionClosed(reason)))
        }
        let handlers = closeHandlers
        closeHandlers = []
        let current = handler
        handler = nil
        handlerReads = false
        current?.connection(self, closedWith: reason)
        for handler in handlers { handler(reason) }
        if let registry {  // after the handler and the observers: a drain it ends has nothing left to wait for
            self.registry = nil
            registry.connectionEnded(self)
        }
        let retained = keepAlive
        keepAlive = nil
        retained?.release()
    }

}

/// ``Connection``'s former name, from when every connection was TCP: the same type, so code written
/// against it keeps compiling. Safe from any thread, as the type is.
public typealias TCPConnection = Connection

/// What the connections of one listener (or one connect) share, immutable: their options and role.
final class ConnectionProfile: Sendable {
    let options: ConnectionOptions
    /// TCP (not Unix-domain): the socket options apply.
    let isTCP: Bool
    /// Reading stops while the output is above the write high-water mark (``ConnectionOptions/readsWhileOutputIsFull``).
    let pausesReadingWhileOutputIsFull: Bool
    /// The shortest of the options' timeouts, and how often a registry's sweep must look at these
    /// connections for them; nil when none is set. Worked out once, not per connection.
    let shortestTimeout: Duration?
    let sweepInterval: Duration?

    /// - Parameter accepted: A listener accepts these connections (or they are the server end of an
    ///   in-memory pair): their role for ``ConnectionOptions/readsWhileOutputIsFull``.
    init(options: ConnectionOptions, isTCP: Bool, accepted: Bool) {
        self.options = options
        self.isTCP = isTCP
        pausesReadingWhileOutputIsFull = !(options.readsWhileOutputIsFull ?? !accepted)
        shortestTimeout = options.shortestTimeout
        sweepInterval = options.sweepInterval
    }
}

/// A connection's rarely used state. Loop-confined, like its connection: its properties skip the runtime's
/// exclusivity checks too.
final class ConnectionExtras {
    @exclusivity(unchecked) var remoteAddress: SocketAddress?
    @exclusivity(unchecked) var localAddress: SocketAddress?
    @exclusivity(unchecked) var connectWaiter: UnsafeContinuation<Result<Connection, NetError>, Never>?
    @exclusivity(unchecked) var connectTimer: ScheduledTimer?
    /// Timeouts: when bytes were last read, output last moved, anything last happened (loop clock), and
    /// the timer of a connection no registry sweeps.
    @exclusivity(unchecked) var timeouts: TimeoutState?
    /// A send failed with this reason; the connection ends once the sending code has let go of its queue.
    @exclusivity(unchecked) var writeFailure: CloseReason?
    /// Output left waiting for the peer: the sent-byte count and the loop's clock when it last moved (or
    /// began waiting). Stamped only on the slow path, when the transport did not take a write whole.
    var outputWait: (sent: UInt64, since: UInt64)?
    /// When a graceful close began waiting for the output to drain (loop clock).
    var closingSince: UInt64?
    /// Input is read and dropped until the close (``Connection/closeAfterDrainingInput(upTo:within:)``).
    var lingering: Lingering?
    /// The transport's handshake's end: told once, nil when done (or the error); and its timeout.
    var handshakeCompletion: ((NetError?) -> Void)?
    var handshakeTimer: ScheduledTimer?
}

extension Connection {
    /// The extras, created on first use.
    var ensuredExtras: ConnectionExtras {
        if let extras { return extras }
        let made = ConnectionExtras()
        extras = made
        return made
    }

    var cachedRemoteAddress: SocketAddress? {
        get { extras?.remoteAddress }
        set { if newValue != nil || extras != nil { ensuredExtras.remoteAddress = newValue } }
    }
    var cachedLocalAddress: SocketAddress? {
        get { extras?.localAddress }
        set { if newValue != nil || extras != nil { ensuredExtras.localAddress = newValue } }
    }
    var connectWaiter: UnsafeContinuation<Result<Connection, NetError>, Never>? {
        get { extras?.connectWaiter }
        set { if newValue != nil || extras != nil { ensuredExtras.connectWaiter = newValue } }
    }
    var connectTimer: ScheduledTimer? {
        get { extras?.connectTimer }
        set { if newValue != nil || extras != nil { ensuredExtras.connectTimer = newValue } }
    }
    /// The timeouts. A mutation through this property copies them out and back (with a retain of their
    /// timer): the read and write paths stamp them in place instead, `extras?.timeouts?.read(at:)`.
    var timeouts: TimeoutState? {
        get { extras?.timeouts }
        set { if newValue != nil || extras != nil { ensuredExtras.timeouts = newValue } }
    }
    var writeFailure: CloseReason? {
        get { extras?.writeFailure }
        set { if newValue != nil || extras != nil { ensuredExtras.writeFailure = newValue } }
    }
}

/// Carries a loop-confined value into a `@Sendable` job for the same loop.
///
/// Unchecked because the value never leaves the loop's thread: it is created there and the job runs there.
package struct UncheckedSendableBox<Value>: @unchecked Sendable {  // made on the loop's thread, opened only by a job on the same loop
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
