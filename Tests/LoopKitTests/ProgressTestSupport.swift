@testable import LoopKit
import Synchronization

/// Records deliveries with the loop iteration each arrived in.
final class DeliveryRecorder: Sendable {
    private let entries = Lock<[(iteration: UInt64, snapshot: ProgressSnapshot)]>([])

    func handler(for loop: EventLoop) -> @Sendable (ProgressSnapshot) -> Void {
        { [self] snapshot in
            precondition(loop.isCurrent, "delivered off the loop thread")
            let iteration = loop.iteration
            entries.withLock { $0.append((iteration, snapshot)) }
        }
    }

    var snapshots: [ProgressSnapshot] { entries.withLock { $0.map(\.snapshot) } }
    var count: Int { entries.withLock { $0.count } }
    var last: ProgressSnapshot? { entries.withLock { $0.last?.snapshot } }
    /// The largest number of deliveries that arrived in one iteration.
    var mostPerIteration: Int {
        entries.withLock { entries in
            var counts: [UInt64: Int] = [:]
            for entry in entries { counts[entry.iteration, default: 0] += 1 }
            return counts.values.max() ?? 0
        }
    }
}

/// A counter for handler runs.
final class RunCounter: Sendable {
    private let value = Atomic<Int>(0)
    func bump() { value.wrappingAdd(1, ordering: .sequentiallyConsistent) }
    var count: Int { value.load(ordering: .sequentiallyConsistent) }
}
