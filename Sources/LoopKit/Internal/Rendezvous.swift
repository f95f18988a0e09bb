import Dispatch
import Synchronization

/// A value one thread hands to another that waits for it, exactly once.
final class Rendezvous<Value: Sendable>: Sendable {
    private let slot = Lock<Value?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    /// Hands over `value`; later calls are ignored. Safe from any thread.
    func fulfil(_ value: Value) {
        let first = slot.withLock { slot -> Bool in
            guard slot == nil else { return false }
            slot = value
            return true
        }
        if first { ready.signal() }
    }

    /// Blocks until ``fulfil(_:)`` was called, then returns its value. Call from one thread, once.
    func wait() -> Value {
        ready.wait()
        return slot.withLock { $0! }
    }
}
