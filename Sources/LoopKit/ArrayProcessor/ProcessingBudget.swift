/// How much of each loop iteration an array-processing job may use.
///
/// A budget of zero is *per-item mode*: one item per iteration, in the per-item order below. Any other budget
/// is *budget mode*: each iteration processes as many items as fit in the budget, then yields the loop so
/// I/O, timers and other queued work run before the next chunk.
///
/// ```swift
/// loop.process(items, budget: .perItem, …)              // U(0) | P(0) | U(1) P(1) | … | U(n) C
/// loop.process(items, budget: .time(.milliseconds(2)), …)
/// ```
///
/// Safe from any thread (a value).
public struct ProcessingBudget: Sendable, Hashable, CustomStringConvertible {
    /// The time each iteration may spend on items, in nanoseconds; `0` means one item per iteration.
    ///
    /// This is the C ABI's `budget_ns`.
    public var nanoseconds: UInt64

    /// Creates a budget from a number of nanoseconds; `0` is per-item mode.
    ///
    /// - Parameter nanoseconds: The time each iteration may spend on items.
    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// One item per loop iteration, in this order: `U(0) | P(0) | U(1) P(1) | … | U(n-1) P(n-1) | U(n) C`.
    public static let perItem = ProcessingBudget(nanoseconds: 0)

    /// As many items per iteration as fit in `duration`; a zero or negative duration is ``perItem``.
    ///
    /// - Parameter duration: The time each iteration may spend on items.
    /// - Returns: The budget.
    public static func time(_ duration: Duration) -> ProcessingBudget {
        ProcessingBudget(nanoseconds: duration.clampedNanoseconds)
    }

    /// The default budget: 4 ms of items per iteration, which keeps a 60 Hz frame loop responsive.
    public static let `default` = ProcessingBudget.time(.milliseconds(4))

    /// Whether this is per-item mode (one item per iteration).
    public var isPerItem: Bool { nanoseconds == 0 }

    /// "per item" or the budget in milliseconds, such as "4 ms".
    public var description: String {
        if isPerItem { return "per item" }
        let micros = nanoseconds / 1_000
        return micros % 1_000 == 0 ? "\(micros / 1_000) ms" : "\(micros) µs"
    }
}
