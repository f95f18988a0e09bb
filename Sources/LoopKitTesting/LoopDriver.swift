import LoopKit

/// Drives an ``EventLoop`` one iteration at a time on virtual time, for deterministic ordering tests.
///
/// ```swift
/// let driver = try LoopDriver()
/// let trace = OrderTrace(driver.loop)
/// try driver.loop.enqueue { trace.record("A") }
/// try driver.step()                          // iteration 1 runs A
/// try driver.advance(by: .milliseconds(5))   // due timers fire, one iteration per deadline
/// ```
///
/// A driver and its loop belong to the thread that created them; call every method there.
public final class LoopDriver: Sendable {
    /// The loop being driven.
    public let loop: EventLoop
    /// The loop's virtual clock.
    public let clock: VirtualClock

    /// Creates a loop on a fresh virtual clock, belonging to the calling thread.
    /// - Parameter drainLimit: Passed to the loop (at most this many queued jobs per iteration).
    /// - Throws: What ``EventLoop/init(clock:drainLimit:)`` throws.
    public init(drainLimit: Int? = nil) throws(EventLoopError) {
        clock = VirtualClock()
        loop = try EventLoop(clock: clock, drainLimit: drainLimit)
    }

    /// Runs one iteration without waiting; returns the callbacks it ran.
    @discardableResult
    public func step() throws(EventLoopError) -> Int {
        try loop.runOnce(blocking: false)
    }

    /// Runs `count` iterations without waiting; returns the callbacks they ran.
    @discardableResult
    public func step(_ count: Int) throws(EventLoopError) -> Int {
        var callbacks = 0
        for _ in 0..<count { callbacks += try step() }
        return callbacks
    }

    /// Whether the loop has queued work or a due timer.
    public var hasPendingWork: Bool { loop.hasQueuedWork || loop.hasDueTimer }

    /// Runs iterations until nothing is queued and no timer is due (time does not move).
    ///
    /// - Parameter maxIterations: A guard against work that re-queues itself forever.
    /// - Returns: The number of iterations run.
    /// - Throws: ``EventLoopError/invalidArgument(_:)`` when the loop is still busy after `maxIterations`.
    @discardableResult
    public func runUntilIdle(maxIterations: Int = 100_000) throws(EventLoopError) -> Int {
        var iterations = 0
        while hasPendingWork {
            guard iterations < maxIterations else {
                throw .invalidArgument("the loop was still busy after \(maxIterations) iterations")
            }
            try step()
            iterations += 1
        }
        return iterations
    }

    /// Moves virtual time forward by `duration`, firing exactly the timers that fall due, in (deadline,
    /// scheduling order).
    ///
    /// Time stops at each due deadline in turn and one iteration runs there, so a timer observes the
    /// clock at its own deadline and a repeating timer fires once per period it spans. Finally time
    /// reaches its target and one more iteration runs.
    public func advance(by duration: Duration) throws(EventLoopError) {
        let target = clock.nanoseconds() &+ UInt64(max(0, duration / .nanoseconds(1)))
        while let deadline = loop.nextTimerDeadline, deadline <= target {
            clock.advance(to: deadline)
            try step()
        }
        clock.advance(to: target)
        try step()
    }
}
