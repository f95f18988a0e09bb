import Synchronization

/// The TLS handshakes a listener's connections failed: counted, and told to an observer if one is set.
///
/// Shared by a listener and its endpoints; safe from any thread (an atomic count, the observer behind a
/// mutex, read only when a handshake fails).
final class FailedHandshakes: Sendable {
    let count = Atomic<Int>(0)
    let observer = Mutex<(@Sendable (NetError) -> Void)?>(nil)

    /// A handshake ended with `error`. Called on the accepting loop's thread.
    func record(_ error: NetError) {
        count.add(1, ordering: .relaxed)
        let observer = observer.withLock { $0 }
        observer?(error)
    }
}
