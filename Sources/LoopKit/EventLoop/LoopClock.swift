/// A monotonic time source for a loop's timers.
///
/// The loop reads its clock once per iteration to find the due timers. ``SystemLoopClock`` is the
/// default; `LoopKitTesting`'s `VirtualClock` lets a test move time by hand.
public protocol LoopClock: Sendable {
    /// Nanoseconds on a monotonic time line. Safe from any thread.
    func nanoseconds() -> UInt64

    /// Whether time passes by itself, so a waiting loop should wake when the next timer is due.
    ///
    /// A virtual clock returns false: its time only moves when a test advances it.
    var advancesByItself: Bool { get }
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`).
public struct SystemLoopClock: LoopClock {
    /// Creates the clock.
    public init() {}

    /// Nanoseconds since an arbitrary fixed point. Safe from any thread.
    @inline(__always)
    public func nanoseconds() -> UInt64 { MonotonicTime.nanoseconds() }

    /// Always true: real time passes by itself.
    public var advancesByItself: Bool { true }
}

extension Duration {
    /// The duration in whole nanoseconds, negative durations as zero.
    package var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, !(seconds == 0 && attoseconds < 0) else { return 0 }
        let (total, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        return total &+ UInt64(attoseconds / 1_000_000_000)
    }
}
