import Synchronization

// Cancel, pause and resume: lock-free flags, cascading to children, handlers run once per transition with
// no lock held. A child added later inherits its parent's cancelled or paused state (see `addChild`).

extension TaskProgress {
    /// Whether the work was cancelled. Cancellation is final.
    ///
    /// Safe from any thread; one atomic load, cheap enough to poll in a work loop.
    public var isCancelled: Bool {
        flags.load(ordering: .acquiring) & Flags.cancelled != 0
    }

    /// Whether the work is paused.
    ///
    /// Safe from any thread; one atomic load.
    public var isPaused: Bool {
        flags.load(ordering: .acquiring) & Flags.paused != 0
    }

    /// Cancels this progress and, recursively, its children (including children added later).
    ///
    /// Runs ``cancellationHandler`` once, on the calling thread, with no lock held. Does nothing if already
    /// cancelled. Observers receive the cancelled state.
    ///
    /// Safe from any thread.
    public func cancel() {
        let old = flags.bitwiseOr(Flags.cancelled, ordering: .sequentiallyConsistent).oldValue
        guard old & Flags.cancelled == 0 else { return }
        let (handler, children) = state.withLock { s -> ((@Sendable () -> Void)?, [TaskProgress]) in
            let handler = s.cancellationHandlerRan ? nil : s.cancellationHandler
            if handler != nil { s.cancellationHandlerRan = true }
            return (handler, s.children.values.map(\.child))
        }
        handler?()
        for child in children { child.cancel() }
        didChange()
    }

    /// Pauses this progress and, recursively, its children (including children added later).
    ///
    /// Runs ``pausingHandler`` once per transition, on the calling thread, with no lock held. Does nothing
    /// if already paused or cancelled.
    ///
    /// Safe from any thread.
    public func pause() {
        guard !isCancelled else { return }
        let old = flags.bitwiseOr(Flags.paused, ordering: .sequentiallyConsistent).oldValue
        guard old & Flags.paused == 0 else { return }
        let (handler, children) = state.withLock { s in (s.pausingHandler, s.children.values.map(\.child)) }
        handler?()
        for child in children { child.pause() }
        didChange()
    }

    /// Resumes this progress and, recursively, its children.
    ///
    /// Runs ``resumingHandler`` once per transition, on the calling thread, with no lock held. Does nothing
    /// if not paused.
    ///
    /// Safe from any thread.
    public func resume() {
        let old = flags.bitwiseAnd(~Flags.paused, ordering: .sequentiallyConsistent).oldValue
        guard old & Flags.paused != 0 else { return }
        let (handler, children) = state.withLock { s in (s.resumingHandler, s.children.values.map(\.child)) }
        handler?()
        for child in children { child.resume() }
        didChange()
    }

    /// Runs once when this progress is cancelled, on the thread that cancels it.
    ///
    /// Setting it on an already-cancelled progress runs it at once, on the setting thread (as Foundation
    /// does); it runs at most once in total.
    ///
    /// Safe from any thread.
    public var cancellationHandler: (@Sendable () -> Void)? {
        get { state.withLock { $0.cancellationHandler } }
        set {
            let runNow = state.withLock { s -> (@Sendable () -> Void)? in
                s.cancellationHandler = newValue
                // Read under the lock: `cancel()` sets the flag before taking it, so one of the two runs it.
                guard isCancelled, !s.cancellationHandlerRan, let handler = newValue else { return nil }
                s.cancellationHandlerRan = true
                return handler
            }
            runNow?()
        }
    }

    /// Runs each time this progress goes from running to paused, on the thread that pauses it.
    ///
    /// Safe from any thread.
    public var pausingHandler: (@Sendable () -> Void)? {
        get { state.withLock { $0.pausingHandler } }
        set { state.withLock { $0.pausingHandler = newValue } }
    }

    /// Runs each time this progress goes from paused to running, on the thread that resumes it.
    ///
    /// Safe from any thread.
    public var resumingHandler: (@Sendable () -> Void)? {
        get { state.withLock { $0.resumingHandler } }
        set { state.withLock { $0.resumingHandler = newValue } }
    }
}
