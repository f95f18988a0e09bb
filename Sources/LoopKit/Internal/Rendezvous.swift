import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value one thread hands to another that waits for it, exactly once.
final class Rendezvous<Value: Sendable>: Sendable {
    private let slot = Lock<Value?>(nil)
    private let fulfilled = Atomic<Bool>(false)
    private let ready = DispatchSemaphore(value: 0)

    /// Hands over `value`; later calls are ignored. Safe from any thread.
    func fulfil(_ value: Value) {
        let first = slot.withLock { slot -> Bool in
            guard slot == nil else { return false }
            slot = value
            return true
        }
        guard first else { return }
        fulfilled.store(true, ordering: .releasing)
        ready.signal()
    }

    /// Blocks until ``fulfil(_:)`` was called, then returns its value. Call from one thread, once.
    ///
    /// A round trip to a loop usually answers within microseconds, so the waiter first yields the CPU a
    /// bounded number of times, checking for the value, before it parks on the semaphore: an answer that
    /// comes in that window costs no futex sleep and wake-up.
    func wait() -> Value {
        var spins = 0
        while spins < 64, !fulfilled.load(ordering: .acquiring) {
            sched_yield()
            spins += 1
        }
        ready.wait()
        return slot.withLock { $0! }
    }
}
