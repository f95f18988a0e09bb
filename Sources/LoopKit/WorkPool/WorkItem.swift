import Synchronization

/// One unit of work on a ``WorkPool``: what runs on a pool thread, and whom to tell if it never runs.
///
/// Its life is a small state machine on one atomic: created → queued → running, or created/queued →
/// cancelled. Whoever wins the compare-exchange out of `queued` (a pool thread starting it, or a
/// cancellation) takes the body, so exactly one of `run` and `cancel` is ever called, once.
final class WorkItem: Sendable {
    /// What the item does, as two closures.
    struct Body: WorkBody {
        let run: @Sendable () -> Void
        let cancel: @Sendable (any Error) -> Void

        func perform() { run() }
        func cancelled(_ reason: any Error) { cancel(reason) }
    }

    enum State: UInt8, AtomicRepresentable {
        case created, queued, running, cancelled
    }

    private let state = Atomic<State>(.created)
    private let body: Lock<(any WorkBody)?>

    init(run: @escaping @Sendable () -> Void, cancel: @escaping @Sendable (any Error) -> Void) {
        body = Lock(Body(run: run, cancel: cancel))
    }

    /// An item whose body is an object of its own (no closure contexts to allocate).
    init(_ body: any WorkBody) {
        self.body = Lock(body)
    }

    /// Whether the item was cancelled (before it started).
    var isCancelled: Bool { state.load(ordering: .acquiring) == .cancelled }

    /// created → queued; false when it was cancelled first. Under the pool's lock.
    func markQueued() -> Bool {
        state.compareExchange(expected: .created, desired: .queued, ordering: .acquiringAndReleasing).exchanged
    }

    /// queued → running; false when it was cancelled first. Under the pool's lock.
    func markRunning() -> Bool {
        state.compareExchange(expected: .queued, desired: .running, ordering: .acquiringAndReleasing).exchanged
    }

    /// created or queued → cancelled.
    ///
    /// - Returns: The state it left (`.created` or `.queued`), or nil when it had already started or
    ///   been cancelled.
    func markCancelled() -> State? {
        var current = state.load(ordering: .acquiring)
        while current == .created || current == .queued {
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: .cancelled, ordering: .acquiringAndReleasing)
            if exchanged { return current }
            current = original
        }
        return nil
    }

    /// Runs the body (after ``markRunning()`` succeeded), releasing it afterwards.
    func run() {
        takeBody()?.perform()
    }

    /// Tells the waiter the work never ran (after ``markCancelled()`` succeeded, or when the pool refused it).
    func reportCancelled(_ reason: any Error) {
        takeBody()?.cancelled(reason)
    }

    private func takeBody() -> (any WorkBody)? {
        body.withLock { body in
            defer { body = nil }
            return body
        }
    }
}

/// What a ``WorkItem`` does: ``perform()`` on a pool thread, or ``cancelled(_:)`` (from whichever
/// thread cancelled it) with the reason it never ran; exactly one of them, once.
protocol WorkBody: Sendable {
    func perform()
    func cancelled(_ reason: any Error)
}
