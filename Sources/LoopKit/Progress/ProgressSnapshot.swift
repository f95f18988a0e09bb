/// A consistent, immutable reading of a ``TaskProgress``: what observers receive.
///
/// Safe from any thread (a value).
public struct ProgressSnapshot: Sendable, Hashable, CustomStringConvertible {
    /// The fraction done, in `0...1`, including children's weighted partial progress.
    public var fractionCompleted: Double
    /// The units completed on the node, including finished children's pending units.
    public var completedUnitCount: Int64
    /// The total unit count; negative when the node's own total is unknown.
    public var totalUnitCount: Int64
    /// Whether the node or an unfinished child with pending units is indeterminate.
    public var isIndeterminate: Bool
    /// Whether the node's work is done.
    public var isFinished: Bool
    /// Whether the node was cancelled.
    public var isCancelled: Bool
    /// Whether the node is paused.
    public var isPaused: Bool
    /// The smoothed rate in units per second, if known.
    public var throughput: Double?
    /// The estimated time left, if known.
    public var estimatedTimeRemaining: Duration?
    /// The noun for the units, used by ``description``.
    public var unitName: ProgressUnitName

    /// Creates a snapshot from its parts (mainly for tests and previews).
    public init(
        fractionCompleted: Double, completedUnitCount: Int64, totalUnitCount: Int64,
        isIndeterminate: Bool = false, isFinished: Bool = false, isCancelled: Bool = false,
        isPaused: Bool = false, throughput: Double? = nil, estimatedTimeRemaining: Duration? = nil,
        unitName: ProgressUnitName = .items
    ) {
        self.fractionCompleted = fractionCompleted
        self.completedUnitCount = completedUnitCount
        self.totalUnitCount = totalUnitCount
        self.isIndeterminate = isIndeterminate
        self.isFinished = isFinished
        self.isCancelled = isCancelled
        self.isPaused = isPaused
        self.throughput = throughput
        self.estimatedTimeRemaining = estimatedTimeRemaining
        self.unitName = unitName
    }

    /// A short human-readable summary, such as "42% — 420 of 1,000 items, about 3 s left".
    ///
    /// The percentage is rounded down (it shows 100% only when finished), counts use "," thousands
    /// separators, and the estimate reads "about N s", "about N min" or "about H h M min".
    public var description: String { ProgressFormatting.describe(self) }
}

extension TaskProgress {
    /// Reads every property at once, under one lock, and takes an estimate sample.
    ///
    /// Safe from any thread.
    /// - Returns: The current state of this progress.
    public func snapshot() -> ProgressSnapshot {
        let (value, rate, remaining) = state.withLock { s in
            let value = evaluate(&s)
            s.estimator.sample(units: value.effectiveUnits, at: clock.nanoseconds())
            return (value, s.estimator.unitsPerSecond, s.estimator.remaining(after: value))
        }
        let bits = flags.load(ordering: .acquiring)
        return ProgressSnapshot(
            fractionCompleted: value.fraction,
            completedUnitCount: value.completed,
            totalUnitCount: value.total,
            isIndeterminate: value.isIndeterminate,
            isFinished: value.isFinished,
            isCancelled: bits & Flags.cancelled != 0,
            isPaused: bits & Flags.paused != 0,
            throughput: rate,
            estimatedTimeRemaining: remaining,
            unitName: unitName
        )
    }
}
