import LoopKit
import Synchronization

/// A record of what ran, in order, with the loop iteration each thing ran in.
///
/// ```swift
/// #expect(trace.description == "1:A 1:B 2:C")
/// ```
public final class OrderTrace: Sendable, CustomStringConvertible {
    /// One recorded event.
    public struct Entry: Sendable, Equatable {
        /// What was recorded.
        public let label: String
        /// The loop's iteration when it was recorded.
        public let iteration: UInt64
    }

    private let loop: EventLoop
    private let storage = Lock<[Entry]>([])

    /// Creates an empty trace that stamps entries with `loop`'s iteration.
    public init(_ loop: EventLoop) { self.loop = loop }

    /// Appends `label` with the loop's current iteration. Safe from any thread.
    public func record(_ label: String) {
        let entry = Entry(label: label, iteration: loop.iteration)
        storage.withLock { $0.append(entry) }
    }

    /// Everything recorded so far, in order. Safe from any thread.
    public var entries: [Entry] { storage.withLock { $0 } }

    /// The labels recorded so far, in order. Safe from any thread.
    public var labels: [String] { entries.map(\.label) }

    /// The iteration `label` was first recorded in, or nil. Safe from any thread.
    public func iteration(of label: String) -> UInt64? {
        entries.first { $0.label == label }?.iteration
    }

    /// The entries as `iteration:label`, space-separated, e.g. `"1:A 1:B 2:C"`. Safe from any thread.
    public var description: String {
        entries.map { "\($0.iteration):\($0.label)" }.joined(separator: " ")
    }
}
