#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The monotonic clock read, the one place LoopKit calls `clock_gettime`. ``SystemLoopClock`` (the
/// default clock of loops and of ``TaskProgress`` estimates) reads time through it.
enum MonotonicTime {
    /// Nanoseconds since an unspecified fixed point, never decreasing. Safe from any thread.
    ///
    /// The corresponding C call is `clock_gettime(CLOCK_MONOTONIC)`.
    @inline(__always)
    static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
