import Synchronization

/// A timer scheduled on an ``EventLoop``: one-shot or repeating, cancellable from any thread.
///
/// The loop keeps a timer until it has fired (one-shot) or been cancelled; dropping the handle does not
/// cancel it.
public final class ScheduledTimer: Sendable {
    /// The repeat interval in nanoseconds, or nil for a one-shot timer.
    let interval: UInt64?
    let body: @Sendable () -> Void
    /// Called when the loop, not ``cancel()``, cancels the timer (shutdown, or the loop freed): the
    /// toolkit's own timers use it so that a run waiting for one is never left hanging.
    let whenDropped: (@Sendable () -> Void)?
    private let status = Atomic<UInt8>(Status.scheduled)

    private enum Status {
        static let scheduled: UInt8 = 0
        static let fired: UInt8 = 1
        static let cancelled: UInt8 = 2
    }

    init(interval: UInt64?, body: @escaping @Sendable () -> Void, whenDropped: (@Sendable () -> Void)? = nil) {
        self.interval = interval
        self.body = body
        self.whenDropped = whenDropped
    }

    /// Stops the timer: it will not fire again. Cancelling twice, or after a one-shot timer fired, does
    /// nothing. A timer whose callback is running finishes that call.
    ///
    /// Safe from any thread.
    public func cancel() {
        _ = status.compareExchange(expected: Status.scheduled, desired: Status.cancelled, ordering: .relaxed)
    }

    /// Whether ``cancel()`` stopped the timer (or its loop shut down) before it was done. Safe from any thread.
    public var isCancelled: Bool { status.load(ordering: .relaxed) == Status.cancelled }

    /// Whether the timer has finished: a one-shot timer fired, or the timer was cancelled (by
    /// ``cancel()`` or its loop's shutdown; ``isCancelled`` tells which). It will not fire again.
    ///
    /// Safe from any thread.
    public var isFinished: Bool { status.load(ordering: .relaxed) != Status.scheduled }

    /// Whether the timer repeats. Safe from any thread.
    public var isRepeating: Bool { interval != nil }

    func markFired() {
        _ = status.compareExchange(expected: Status.scheduled, desired: Status.fired, ordering: .relaxed)
    }

    /// The loop cancels the timer (shutdown, or the loop freed); tells ``whenDropped`` if it was pending.
    func markCancelled() {
        if status.compareExchange(expected: Status.scheduled, desired: Status.cancelled, ordering: .relaxed).exchanged {
            whenDropped?()
        }
    }
}

/// A timer's place in the loop's heap: ordered by deadline, then by scheduling order (R8).
struct TimerEntry: Comparable {
    let deadline: UInt64
    let sequence: UInt64
    let timer: ScheduledTimer

    static func < (lhs: TimerEntry, rhs: TimerEntry) -> Bool {
        lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.sequence < rhs.sequence
    }

    static func == (lhs: TimerEntry, rhs: TimerEntry) -> Bool { lhs.sequence == rhs.sequence }
}
