// The C boundary of the Progress folder: thread-local storage (pthread keys) and the monotonic clock.
// This is the only file in Progress/ that calls C or converts raw pointers.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension TaskProgress {
    /// Reads the monotonic clock in nanoseconds: the default time source for estimates.
    ///
    /// The corresponding C call is `clock_gettime(CLOCK_MONOTONIC)`. Safe from any thread.
    /// - Returns: Nanoseconds since an unspecified fixed point, never decreasing.
    @Sendable
    public static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// The per-thread stack of frames made current by `becomeCurrent(withPendingUnitCount:)`.
///
/// Only its own thread touches it, so it needs no lock.
final class ThreadProgressFrames {
    var frames: [CurrentFrame] = []

    /// The pthread key owning each thread's stack; its destructor releases the stack at thread exit.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<ThreadProgressFrames>.fromOpaque(pointer).release()
        }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// The calling thread's stack, if it has one. The corresponding C call is `pthread_getspecific`.
    static var existing: ThreadProgressFrames? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<ThreadProgressFrames>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The calling thread's stack, created on first use. The corresponding C call is `pthread_setspecific`.
    static var forCurrentThread: ThreadProgressFrames {
        if let frames = existing { return frames }
        let frames = ThreadProgressFrames()
        pthread_setspecific(key, Unmanaged.passRetained(frames).toOpaque())
        return frames
    }
}
