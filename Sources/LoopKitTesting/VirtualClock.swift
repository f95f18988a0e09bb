import LoopKit
import Synchronization

/// A clock whose time moves only when a test moves it.
///
/// Give it to an ``EventLoop`` (or use ``LoopDriver``, which does) and timers fire exactly when the test
/// advances time past their deadlines, never on their own.
public final class VirtualClock: LoopClock {
    private let now: Atomic<UInt64>

    /// Creates a clock reading `nanoseconds`.
    public init(nanoseconds: UInt64 = 0) { now = Atomic(nanoseconds) }

    /// The current virtual time. Safe from any thread.
    public func nanoseconds() -> UInt64 { now.load(ordering: .acquiring) }

    /// Always false: virtual time does not pass by itself, so a loop never waits for it.
    public var advancesByItself: Bool { false }

    /// Moves time forward by `duration` (negative durations do nothing). Safe from any thread.
    public func advance(by duration: Duration) {
        let nanoseconds = UInt64(max(0, duration / .nanoseconds(1)))
        now.add(nanoseconds, ordering: .releasing)
    }

    /// Moves time forward to `nanoseconds`; an earlier time leaves the clock where it is.
    /// Safe from any thread.
    public func advance(to nanoseconds: UInt64) {
        _ = now.max(nanoseconds, ordering: .releasing)
    }
}
