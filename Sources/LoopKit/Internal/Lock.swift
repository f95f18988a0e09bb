import Synchronization

/// `Synchronization.Mutex`, made visible to the thread sanitizer.
///
/// On Linux, `Mutex` takes its lock in uninstrumented library code, so ThreadSanitizer sees none of its
/// happens-before edges and reports every access it protects as a race (a two-thread counter under
/// `Mutex.withLock` is enough to show it). In sanitizer builds (`make test-sanitize` passes
/// `-DLOOPKIT_TSAN`) this wrapper tells TSan about each acquire and release; in every other build it is
/// exactly `Mutex.withLock`.
package struct Lock<Value: ~Copyable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    #if LOOPKIT_TSAN
    private let key = SanitizerKey()
    #endif

    package init(_ value: consuming sending Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if LOOPKIT_TSAN
        let key = self.key
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            key.acquired()
            defer { key.releasing() }
            return try body(&value)
        }
        #else
        return try mutex.withLock(body)
        #endif
    }
}

#if LOOPKIT_TSAN
@_silgen_name("__tsan_acquire") private func tsanAcquire(_ address: UnsafeRawPointer)
@_silgen_name("__tsan_release") private func tsanRelease(_ address: UnsafeRawPointer)

/// A unique address to name one lock to the sanitizer.
package final class SanitizerKey: Sendable {
    package init() {}
    package func acquired() { tsanAcquire(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())) }
    package func releasing() { tsanRelease(UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())) }
}
#endif
