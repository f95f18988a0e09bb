/// The kinds of readiness a ``Watch`` reports for a file descriptor.
public struct IOEvents: OptionSet, Sendable, Hashable {
    public let rawValue: Int32
    /// Creates a set from raw bits (`1` readable, `2` writable, as `LK_READABLE`/`LK_WRITABLE`).
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The descriptor can be read without blocking (or has reached end of file).
    public static let readable = IOEvents(rawValue: 1)
    /// The descriptor can be written without blocking.
    public static let writable = IOEvents(rawValue: 2)
}

/// A file-descriptor or signal watch on an ``EventLoop``, active until cancelled or the loop shuts down.
///
/// The loop keeps the watch; dropping the handle does not cancel it.
public final class Watch: Sendable {
    private weak let loop: EventLoop?
    /// The loop, for ``fire(_:)`` alone: libevent calls it only from inside the loop's own iteration, so
    /// the loop is alive then, and the weak load (and its release) is saved on every callback.
    private unowned(unsafe) let firingLoop: EventLoop
    private let registration: LoopConfined<Registration?>

    struct Registration {
        let event: LibEventHandle
        let handler: (IOEvents) -> Void
        /// False while paused.
        var isActive = true
    }

    init(loop: EventLoop) {
        self.loop = loop
        firingLoop = loop
        registration = LoopConfined(nil, owner: loop.owner)
    }

    /// Registers the libevent event and starts watching. Loop thread only.
    func start(
        fd: Int32, flags: LibEventFlags, handler: @escaping (IOEvents) -> Void
    ) throws(EventLoopError) {
        guard let loop else { throw .shutDown }
        let event = try LibEventHandle(
            base: loop.events.base, fd: fd, flags: flags.union(.persist),
            context: Unmanaged.passUnretained(self).toOpaque()
        ) { _, what, context in
            let watch = Unmanaged<Watch>.fromOpaque(context!).takeUnretainedValue()
            watch.fire(LibEventFlags(rawValue: what))
        }
        try event.add()
        registration.value = Registration(event: event, handler: handler)
        loop.state.value.watches[ObjectIdentifier(self)] = self
    }

    private func fire(_ what: LibEventFlags) {
        // The handler alone is copied out (the handler may cancel the watch, which drops the registration):
        // a copy of the whole registration retained and released its event too.
        guard let handler = registration.value?.handler else { return }
        var events: IOEvents = []
        if what.contains(.read) || what.contains(.signal) { events.insert(.readable) }
        if what.contains(.write) { events.insert(.writable) }
        firingLoop.state.value.callbacksRun += 1
        if firingLoop.state.value.isObserved { firingLoop.noteIOCallback() }
        handler(events)
    }

    /// Stops the watch; its handler is not called again. Cancelling twice does nothing.
    ///
    /// Call on the loop's thread; from another thread the watch stops in the loop's next iteration.
    /// The corresponding libevent call is `event_del`.
    public func cancel() {
        guard let loop else { return }
        if loop.isCurrent {
            loop.state.value.watches[ObjectIdentifier(self)] = nil
            invalidate()
        } else {
            do {
                try loop.enqueue { [self] in self.cancel() }
            } catch {
                // Refused only once shutdown() was called, and shutdown cancels every watch: the watch
                // is (or is about to be) cancelled, which is what was asked.
            }
        }
    }

    /// Stops reporting readiness until ``resume()``, keeping the watch (no allocation either way): how a
    /// connection stops reading while its peer is slow, and starts again.
    ///
    /// Pausing a paused or finished watch does nothing.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `event_del`.
    public func pause() {
        guard let loop else { return }
        precondition(loop.isCurrent, "LoopKit: Watch.pause() called off its loop's thread")
        guard var current = registration.value, current.isActive else { return }
        current.event.remove()
        current.isActive = false
        registration.value = current
    }

    /// Reports readiness again after ``pause()``. Resuming an active or finished watch does nothing.
    ///
    /// - Throws: ``EventLoopError/libevent(_:errno:)`` when libevent refuses the descriptor again.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `event_add`.
    public func resume() throws(EventLoopError) {
        guard let loop else { return }
        precondition(loop.isCurrent, "LoopKit: Watch.resume() called off its loop's thread")
        guard var current = registration.value, !current.isActive else { return }
        try current.event.add()
        current.isActive = true
        registration.value = current
    }

    /// Whether the watch reports readiness now: not paused, not finished. Call on the loop's thread.
    public var isActive: Bool {
        guard let loop else { return false }
        precondition(loop.isCurrent, "LoopKit: Watch.isActive read off its loop's thread")
        return registration.value?.isActive ?? false
    }

    /// Whether the watch has finished: cancelled, or its loop shut down. Its handler is not called again.
    ///
    /// Call on the loop's thread (checked in every build: the process stops otherwise).
    public var isFinished: Bool {
        guard let loop else { return true }
        precondition(loop.isCurrent, "LoopKit: Watch.isFinished read off its loop's thread")
        return registration.value == nil
    }

    /// Removes and frees the libevent event. Loop thread (or loop teardown) only.
    func invalidate() {
        guard let registration = registration.valueForTeardown else { return }
        self.registration.valueForTeardown = nil
        registration.event.remove()
    }
}

extension EventLoop {
    /// Calls `handler` on the loop whenever `fd` is ready for any of `events`, until cancelled.
    ///
    /// Ready descriptors are served in phase 2 of every iteration, even when each iteration queues more
    /// work (R4). The watch is level-triggered: it keeps reporting while the descriptor stays ready.
    ///
    /// - Parameters:
    ///   - fd: An open file descriptor; the loop does not own or close it.
    ///   - events: ``IOEvents/readable``, ``IOEvents/writable`` or both.
    ///   - handler: Called on the loop's thread with the events that are ready.
    /// - Returns: The watch, to cancel it.
    /// - Throws: ``EventLoopError/wrongThread(operation:)`` off the loop's thread;
    ///   ``EventLoopError/invalidArgument(_:)`` for a negative fd or no events;
    ///   ``EventLoopError/shutDown`` once shut down; ``EventLoopError/libevent(_:errno:)`` when libevent
    ///   refuses the descriptor.
    ///
    /// Call on the loop's thread. The corresponding libevent calls are `event_new` and `event_add`.
    @discardableResult
    public func watch(_ fd: Int32, for events: IOEvents, _ handler: @escaping (IOEvents) -> Void) throws(EventLoopError) -> Watch {
        guard fd >= 0 else { throw .invalidArgument("file descriptor must not be negative, got \(fd)") }
        guard !events.isEmpty, events.isSubset(of: [.readable, .writable]) else {
            throw .invalidArgument("events must be .readable, .writable or both")
        }
        var flags: LibEventFlags = []
        if events.contains(.readable) { flags.insert(.read) }
        if events.contains(.writable) { flags.insert(.write) }
        return try register(fd: fd, flags: flags, operation: "watch(_:for:_:)", handler)
    }

    /// Calls `handler` on the loop each time the process receives `signal`, until cancelled.
    ///
    /// Delivery goes through libevent, so the handler runs as an ordinary callback in phase 2, not in
    /// signal context. libevent lets only one base handle signals at a time.
    ///
    /// - Parameters:
    ///   - signal: A signal number such as `SIGINT` or `SIGTERM`.
    ///   - handler: Called on the loop's thread.
    /// - Returns: The watch, to cancel it (which restores the signal's previous disposition).
    /// - Throws: As ``watch(_:for:_:)``.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `evsignal_new`.
    @discardableResult
    public func onSignal(_ signal: Int32, _ handler: @escaping () -> Void) throws(EventLoopError) -> Watch {
        guard signal > 0, signal < 65 else { throw .invalidArgument("not a signal number: \(signal)") }
        return try register(fd: signal, flags: .signal, operation: "onSignal(_:_:)") { _ in handler() }
    }

    func register(
        fd: Int32, flags: LibEventFlags, operation: String, _ handler: @escaping (IOEvents) -> Void
    ) throws(EventLoopError) -> Watch {
        guard owner.isCurrent else { throw .wrongThread(operation: operation) }
        guard queue.isAccepting else { throw .shutDown }
        let watch = Watch(loop: self)
        try watch.start(fd: fd, flags: flags, handler: handler)
        return watch
    }
}
