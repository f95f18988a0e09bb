import Dispatch
import LoopKit
import LoopKitNet

/// What a client connection on a running loop has received, filled on that loop's thread and read by the
/// test's thread, which waits on it (the live transport's and the group's in-memory transport's).
final class TransportInbox: Sendable {
    /// LoopKit's `Lock` (a `Mutex` the thread sanitizer can see).
    private let state = Lock<(bytes: [UInt8], closed: Bool)>(([], false))
    /// Signalled on every arrival and on close.
    private let arrived = DispatchSemaphore(value: 0)

    /// Installs the callbacks that fill the inbox on `connection`. Call on its loop's thread.
    func fill(from connection: Connection) {
        connection.onRead { [self] bytes in
            state.withLock { $0.bytes.append(contentsOf: bytes) }
            arrived.signal()
            return bytes.count
        }
        connection.onClose { [self] _ in
            state.withLock { $0.closed = true }
            arrived.signal()
        }
    }

    /// Takes every byte received since the last call.
    func take() -> [UInt8] {
        state.withLock { state in
            defer { state.bytes.removeAll(keepingCapacity: true) }
            return state.bytes
        }
    }

    /// Whether the connection has closed.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Returns at once when bytes are waiting or the connection has closed; else waits for either, at most
    /// `timeout`. Returns whether something arrived.
    func wait(upTo timeout: Duration) -> Bool {
        if state.withLock({ !$0.bytes.isEmpty || $0.closed }) { return true }
        return arrived.wait(timeout: .now() + .seconds(Int(timeout.components.seconds))) == .success
    }

    /// Lets real time pass on the calling thread (a live test's `advance(by:)`); arrivals meanwhile are kept.
    static func sleep(for duration: Duration) {
        let nanoseconds = max(0, duration / .nanoseconds(1))
        let until = DispatchTime.now() + .nanoseconds(Int(min(nanoseconds, Double(Int.max))))
        _ = DispatchSemaphore(value: 0).wait(timeout: until)
    }
}
