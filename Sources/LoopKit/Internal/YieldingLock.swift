import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A lock for critical sections of a few instructions that many threads enter at once: the next-iteration
/// queue's inbox and a work pool's queue.
///
/// `Synchronization.Mutex` on Linux is a priority-inheritance futex: a contended lock sleeps in the kernel
/// (`FUTEX_LOCK_PI`) and an unlock with sleepers hands ownership to one of them (`FUTEX_UNLOCK_PI`), which
/// then has to be scheduled before anyone can enter. On an oversubscribed machine that sleeper waits for a
/// core for milliseconds while every other producer piles up behind it: a lock convoy (issue 11 measured
/// 4 × 250k cross-thread invokes at 172 ms quiet and 8.18 s beside a two-thread compile). This lock never
/// sleeps and never hands over: a waiter spins briefly, then yields its core, and whoever runs when the
/// lock is free takes it. The sections it guards append 16 bytes or swap two buffers.
///
/// The unchecked conformance stands for the lock itself: `value` is reached only between a successful
/// acquiring exchange of `held` and the releasing store that ends ``withLock(_:)``. (The sanitizer sees
/// those atomics, so no annotation is needed.)
final class YieldingLock<Value: ~Copyable>: @unchecked Sendable {  // a lock: its value is reached only while it is held
    private let held = Atomic<Bool>(false)
    @exclusivity(unchecked) private var value: Value

    init(_ value: consuming Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value. Safe from any thread; not reentrant.
    @inline(__always)
    func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        acquire()
        defer { held.store(false, ordering: .releasing) }
        return try body(&value)
    }

    /// Runs `body` with exclusive access to the value, handing it `argument` to consume (to store it in
    /// the value without a copy: a closure that captured `argument` could only copy it, and copying a job
    /// retains its context, an atomic operation on a count other threads change too). Safe from any
    /// thread; not reentrant.
    @inline(__always)
    func withLock<Argument: ~Copyable, Result, E: Error>(
        handing argument: consuming Argument,
        _ body: (inout Value, consuming Argument) throws(E) -> Result
    ) throws(E) -> Result {
        acquire()
        defer { held.store(false, ordering: .releasing) }
        return try body(&value, argument)
    }

    /// Takes the lock: one exchange when it is free.
    @inline(__always)
    private func acquire() {
        if !held.compareExchange(expected: false, desired: true, successOrdering: .acquiring, failureOrdering: .relaxed).exchanged {
            acquireContended()
        }
    }

    /// Spins a little (the holder is usually running on another core and almost done), then yields the
    /// core between attempts (the holder may be waiting for one).
    @inline(never)
    private func acquireContended() {
        var attempts = 0
        while true {
            if !held.load(ordering: .relaxed),
               held.compareExchange(expected: false, desired: true, successOrdering: .acquiring, failureOrdering: .relaxed).exchanged {
                return
            }
            attempts += 1
            if attempts > 100 { sched_yield() }
        }
    }
}
