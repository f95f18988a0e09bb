import Synchronization

/// A unit-counting progress node in a tree, safe to update from any thread and observable on an event loop.
///
/// `TaskProgress` is LoopKit's counterpart of Foundation's `NSProgress`: a node counts
/// ``completedUnitCount`` out of ``totalUnitCount`` and may have children, each weighted by the *pending unit
/// count* it stands for in its parent. A child joins its parent explicitly with
/// ``addChild(_:withPendingUnitCount:)`` or implicitly, when it is created while its parent is
/// ``current`` (see `withCurrent(pendingUnitCount:_:)` and ``becomeCurrent(withPendingUnitCount:)``).
///
/// ```swift
/// let download = TaskProgress(totalUnitCount: 2)
/// let files = download.withCurrent(pendingUnitCount: 1) { TaskProgress(totalUnitCount: 1_000) }
/// files.increment()                       // any thread, lock-free
/// let token = download.observe(on: loop) { print($0) }   // "0% — 0 of 2 items" … on the loop thread
/// ```
///
/// ### Cost
/// ``increment(by:)`` is one atomic add and one atomic load in the common case, whatever the depth or the
/// number of children and observers: ancestors are *marked* stale at most once between two reads and
/// recompute lazily, from the stale children only, when read. The first change after an observer's
/// delivery enqueues one delivery on the observer's loop; later changes until that delivery are free.
///
/// ### Thread rules
/// Every member is safe from any thread. Handlers (``cancellationHandler`` and friends) run on the thread
/// that caused the transition, with no lock held. Observers run on their loop's thread.
///
/// ### Indeterminate progress
/// A ``totalUnitCount`` below zero makes a node indeterminate, and (unlike Foundation) an indeterminate
/// child with pending units makes every ancestor report ``isIndeterminate`` too, until it finishes or
/// learns its total.
public final class TaskProgress: Sendable {
    // MARK: Storage

    /// Units completed directly on this node, including the pending units of children that finished.
    let completed: Atomic<Int64>
    /// The total unit count; negative means indeterminate.
    let total: Atomic<Int64>
    /// Bit set of ``Flags``: the lock-free half of the node's state.
    let flags = Atomic<UInt32>(0)
    /// The locked half of the node's state: tree links, cached child fractions, handlers, observers.
    let state: Lock<NodeState>
    /// The time source for throughput estimates, in nanoseconds.
    let clock: any LoopClock

    /// The noun used by descriptions of this progress, such as "items" or "files".
    ///
    /// Safe from any thread.
    public let unitName: ProgressUnitName

    /// Bits of ``flags``.
    enum Flags {
        /// Attached to a parent and not in the parent's stale list: the next change must tell the parent.
        static let signalsParent: UInt32 = 1 << 0
        /// Has observers and no notification outstanding: the next change must schedule deliveries.
        static let signalsObservers: UInt32 = 1 << 1
        /// Cancelled (terminal).
        static let cancelled: UInt32 = 1 << 2
        /// Paused.
        static let paused: UInt32 = 1 << 3
        /// Either signalling bit: a change must take the slow path.
        static let signalling: UInt32 = signalsParent | signalsObservers
    }

    // MARK: Creating

    /// Creates a progress that joins the ``current`` progress as a child, if there is one.
    ///
    /// Like `+[NSProgress progressWithTotalUnitCount:]`: the first progress created while another is current
    /// becomes its child with the pending unit count given to
    /// `withCurrent(pendingUnitCount:_:)` or ``becomeCurrent(withPendingUnitCount:)``; later
    /// ones join with zero pending units (they still receive cancellation, pause and resume).
    ///
    /// Safe from any thread.
    /// - Parameters:
    ///   - totalUnitCount: The number of units of work; `-1` (any negative value) for indeterminate.
    ///   - unitName: The noun for the units in ``description``.
    ///   - clock: The time source for throughput and time-remaining estimates: a loop's clock (``EventLoop``
    ///     takes the same ``LoopClock``), so a test's virtual clock drives both; defaults to the system's
    ///     monotonic clock.
    public convenience init(
        totalUnitCount: Int64,
        unitName: ProgressUnitName = .items,
        clock: any LoopClock = SystemLoopClock()
    ) {
        self.init(detachedTotal: totalUnitCount, unitName: unitName, clock: clock)
        if let frame = CurrentFrame.innermost {
            let pending = frame.claim() ? frame.pendingUnitCount : 0
            frame.progress.addChild(self, withPendingUnitCount: pending)
        }
    }

    /// Creates a progress that does not join the ``current`` progress.
    ///
    /// Safe from any thread.
    /// - Parameters:
    ///   - totalUnitCount: The number of units of work; `-1` (any negative value) for indeterminate.
    ///   - unitName: The noun for the units in ``description``.
    ///   - clock: The time source for estimates (a ``LoopClock``); defaults to the system's monotonic clock.
    /// - Returns: A root progress, until you add it to a parent with ``addChild(_:withPendingUnitCount:)``.
    public static func discrete(
        totalUnitCount: Int64,
        unitName: ProgressUnitName = .items,
        clock: any LoopClock = SystemLoopClock()
    ) -> TaskProgress {
        TaskProgress(detachedTotal: totalUnitCount, unitName: unitName, clock: clock)
    }

    init(detachedTotal: Int64, unitName: ProgressUnitName, clock: any LoopClock) {
        self.completed = Atomic(0)
        self.total = Atomic(detachedTotal)
        self.state = Lock(NodeState())
        self.clock = clock
        self.unitName = unitName
    }

    // MARK: Units

    /// The number of units of work; negative (conventionally `-1`) means indeterminate.
    ///
    /// Safe from any thread.
    public var totalUnitCount: Int64 {
        get { total.load(ordering: .sequentiallyConsistent) }
        set {
            total.store(newValue, ordering: .sequentiallyConsistent)
            didChange()
        }
    }

    /// The units completed on this node, including the pending units of children that have finished.
    ///
    /// A child's partial progress shows in ``fractionCompleted`` but not here, as with Foundation.
    ///
    /// Safe from any thread.
    public var completedUnitCount: Int64 {
        get {
            state.withLock { _ = evaluate(&$0) }
            return completed.load(ordering: .sequentiallyConsistent)
        }
        set {
            completed.store(newValue, ordering: .sequentiallyConsistent)
            didChange()
        }
    }

    /// Adds completed units: the lock-free fast path.
    ///
    /// Costs one atomic add and one atomic load unless this is the first change since the parent or an
    /// observer last read this node; then it also marks the ancestors stale, O(depth), and enqueues at most
    /// one delivery per observer. It never allocates when nobody observes the tree.
    ///
    /// Safe from any thread.
    /// - Parameter count: The units to add; may be negative to undo.
    public func increment(by count: Int64 = 1) {
        completed.wrappingAdd(count, ordering: .sequentiallyConsistent)
        didChange()
    }

    /// The fraction of the work done, in `0...1`, including the weighted partial progress of children.
    ///
    /// An indeterminate node reports `0`; an indeterminate child counts as `0` in its parent.
    ///
    /// Safe from any thread.
    public var fractionCompleted: Double {
        state.withLock { evaluate(&$0) }.fraction
    }

    /// Whether the amount of work is unknown: this node's total is negative, or an unfinished child with
    /// pending units is indeterminate.
    ///
    /// Safe from any thread.
    public var isIndeterminate: Bool {
        state.withLock { evaluate(&$0) }.isIndeterminate
    }

    /// Whether all the work is done: the total is positive and ``completedUnitCount`` has reached it.
    ///
    /// Safe from any thread.
    public var isFinished: Bool {
        state.withLock { evaluate(&$0) }.isFinished
    }

    // MARK: Change signalling

    /// Takes the slow path if this change must reach a parent or observers. One atomic load otherwise.
    @inline(__always)
    func didChange() {
        if flags.load(ordering: .sequentiallyConsistent) & Flags.signalling != 0 {
            propagateChange()
        }
    }
}

extension TaskProgress: CustomStringConvertible {
    /// A short human-readable summary, such as "42% — 420 of 1,000 items, about 3 s left".
    ///
    /// Safe from any thread.
    public var description: String { snapshot().description }
}
