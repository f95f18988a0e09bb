import Synchronization

/// A loop's clock as a Swift `Clock`: its time is the loop's (real, or a test's virtual time), and a sleep
/// on it ends with the loop's own timer.
///
/// ```swift
/// try await Task.sleep(for: .seconds(5), clock: loop.clock)   // woken by a timer of `loop`
/// ```
///
/// A sleeping task is resumed from the loop's timer callback (phase 2); a task that runs on the loop
/// (``EventLoop`` as its executor preference, or an actor pinned to it) then goes on in that iteration's
/// drain (phase 3). Under `LoopKitTesting`'s `LoopDriver` the loop's time is virtual: a sleep ends when
/// the test advances the time past its deadline, so async code with sleeps and timeouts runs without real
/// waiting and in a repeatable order.
///
/// A sleep ends exactly once: when its deadline passes, with `CancellationError` when its task is
/// cancelled first, or with ``EventLoopError/shutDown`` when the loop shuts down first (or already had).
///
/// Safe from any thread.
public struct EventLoopClock: Clock {
    /// A point in a loop's time: nanoseconds on its clock's time line.
    public struct Instant: InstantProtocol {
        /// Nanoseconds since the clock's fixed point.
        public let nanoseconds: UInt64

        /// An instant at `nanoseconds` on the loop's time line.
        public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

        /// The instant `duration` later (earlier when negative), clamped to the time line.
        public func advanced(by duration: Duration) -> Instant {
            if duration < .zero {
                let back = (Duration.zero - duration).clampedNanoseconds
                return Instant(nanoseconds: nanoseconds >= back ? nanoseconds - back : 0)
            }
            let (sum, overflow) = nanoseconds.addingReportingOverflow(duration.clampedNanoseconds)
            return Instant(nanoseconds: overflow ? .max : sum)
        }

        /// The time from this instant to `other` (negative when `other` is earlier).
        public func duration(to other: Instant) -> Duration {
            other.nanoseconds >= nanoseconds
                ? .nanoseconds(Int64(clamping: other.nanoseconds - nanoseconds))
                : .zero - .nanoseconds(Int64(clamping: nanoseconds - other.nanoseconds))
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
    }

    /// The loop whose time this is and whose timers end sleeps.
    public let loop: EventLoop

    /// The loop's clock. Safe from any thread.
    public init(_ loop: EventLoop) { self.loop = loop }

    /// The loop's time now. Safe from any thread.
    public var now: Instant { Instant(nanoseconds: loop.timeSource.nanoseconds()) }

    /// One nanosecond: the resolution of the loop's timers.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends the calling task until the loop's time reaches `deadline`, with a timer of the loop.
    ///
    /// - Parameters:
    ///   - deadline: When to resume; one that has passed resumes in the loop's next iteration.
    ///   - tolerance: Ignored: loop timers fire at their deadline or as soon after as the loop can.
    /// - Throws: `CancellationError` when the task is cancelled before the deadline;
    ///   ``EventLoopError/shutDown`` when the loop shuts down first, or had shut down.
    ///
    /// Safe from any task.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let sleep = Sleep()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                sleep.begin(continuation)
                do {
                    let timer = try loop.schedule(atNanoseconds: deadline.nanoseconds,
                                                  whenDropped: { sleep.end(throwing: EventLoopError.shutDown) },
                                                  { sleep.end(throwing: nil) })
                    sleep.attach(timer)
                } catch {
                    sleep.end(throwing: error)
                }
            }
        } onCancel: {
            sleep.end(throwing: CancellationError())
        }
    }
}

extension EventLoop {
    /// The loop's time as a Swift `Clock`, for `Task.sleep(for:clock:)`, `Task.sleep(until:clock:)` and
    /// anything generic over `Clock`: sleeps on it end with the loop's timers, on virtual time in tests.
    ///
    /// Safe from any thread.
    public var clock: EventLoopClock { EventLoopClock(self) }
}

/// One sleep's state: waiting for its continuation, waiting for its timer, or over. Whoever ends it first
/// (the timer, a cancellation, the loop's shutdown) resumes the task; every later end does nothing.
private final class Sleep: Sendable {
    private enum State {
        case starting
        case waiting(UnsafeContinuation<Void, any Error>, ScheduledTimer?)
        /// Ended before the continuation was given (a cancellation racing the start).
        case endedEarly(any Error)
        case over
    }

    private let state = Mutex<State>(.starting)

    func begin(_ continuation: UnsafeContinuation<Void, any Error>) {
        let early: (any Error)? = state.withLock { state in
            guard case .endedEarly(let error) = state else {
                state = .waiting(continuation, nil)
                return nil
            }
            state = .over
            return error
        }
        if let early { continuation.resume(throwing: early) }
    }

    func attach(_ timer: ScheduledTimer) {
        let cancelled = state.withLock { state in
            guard case .waiting(let continuation, nil) = state else { return true }
            state = .waiting(continuation, timer)
            return false
        }
        if cancelled { timer.cancel() }
    }

    /// Resumes the task, with `error` or normally; only the first call does anything.
    func end(throwing error: (any Error)?) {
        let taken: (UnsafeContinuation<Void, any Error>, ScheduledTimer?)? = state.withLock { state in
            switch state {
            case .starting:
                state = .endedEarly(error ?? CancellationError())
                return nil
            case .waiting(let continuation, let timer):
                state = .over
                return (continuation, timer)
            case .endedEarly, .over:
                return nil
            }
        }
        guard let (continuation, timer) = taken else { return }
        if error != nil { timer?.cancel() }
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }
}
