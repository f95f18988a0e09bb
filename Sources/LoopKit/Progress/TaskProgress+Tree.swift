import Synchronization

// The progress tree: explicit children, cached child fractions and the lazy, O(depth) change propagation.
//
// Locking: a node's `state` lock may be held while taking a *descendant's* lock (parent → child, used by
// `addChild` and `evaluate`), never an ancestor's. Propagation walks upward taking one lock at a time and
// holding none across steps, so the two orders never form a cycle. No lock is held while user code runs.
//
// Staleness protocol (all orderings sequentially consistent):
// - A child whose `signalsParent` bit is set is *clean*: its parent's cached fraction for it is current.
// - A change (`increment`, setters) first updates the child's atomics, then loads its flags. If the bit is
//   set, the change clears it and appends the child to the parent's stale list, then continues at the
//   parent in the same way. Otherwise somebody already did, and the change costs nothing more.
// - A parent evaluating a stale child sets the child's bit *before* reading the child's atomics, so a
//   change racing with the read is either seen by the read or finds the bit set and marks the child again.

/// The state a ``TaskProgress`` keeps under its lock.
struct NodeState {
    /// The parent, while attached. Weak: a parent keeps its children alive, not the other way round.
    weak var parent: TaskProgress?
    /// Whether this node ever had a parent (a node joins at most one).
    var wasAttached = false
    /// Unfinished children, by identity.
    var children: [ObjectIdentifier: ChildSlot] = [:]
    /// Children that changed since this node last evaluated them.
    var staleChildren: [TaskProgress] = []
    /// The sum of `pending × fraction` over `children`, in this node's units.
    var childUnits: Double = 0
    /// The number of `children` with pending units that are indeterminate.
    var indeterminateChildren = 0
    /// Handlers and whether the cancellation handler already ran.
    var cancellationHandler: (@Sendable () -> Void)?
    var cancellationHandlerRan = false
    var pausingHandler: (@Sendable () -> Void)?
    var resumingHandler: (@Sendable () -> Void)?
    /// Registered observers.
    var observers: [ObserverBox] = []
    /// Throughput samples.
    var estimator = ThroughputEstimator()
}

/// A parent's record of one unfinished child.
struct ChildSlot {
    let child: TaskProgress
    let pendingUnitCount: Int64
    /// The child's fraction when this parent last evaluated it.
    var fraction: Double = 0
    /// Whether the child was indeterminate when this parent last evaluated it.
    var isIndeterminate = false
}

/// A node's computed value.
struct Evaluation {
    var fraction: Double
    var isIndeterminate: Bool
    var isFinished: Bool
    /// The effective completed units, `fraction × total`, for estimates.
    var effectiveUnits: Double
    var total: Int64
    var completed: Int64
}

extension TaskProgress {
    /// Adds a child that stands for `pendingUnitCount` of this progress's units.
    ///
    /// The child's ``fractionCompleted`` counts, weighted, in this progress's; when the child finishes, its
    /// pending units move into this progress's ``completedUnitCount`` and it leaves the tree. A child added
    /// to a cancelled progress is cancelled at once; one added to a paused progress is paused.
    ///
    /// Safe from any thread.
    /// - Parameters:
    ///   - child: A progress without a parent; it must not be this progress or one of its ancestors.
    ///   - pendingUnitCount: The units of this progress the child's work accounts for; zero or more.
    public func addChild(_ child: TaskProgress, withPendingUnitCount pendingUnitCount: Int64) {
        precondition(pendingUnitCount >= 0, "pendingUnitCount must not be negative")
        var ancestor: TaskProgress? = self
        while let node = ancestor {
            precondition(node !== child, "a TaskProgress cannot be added to itself or to a descendant")
            ancestor = node.state.withLock { $0.parent }
        }
        let inherited = state.withLock { s -> UInt32 in
            let attached = child.state.withLock { cs -> Bool in
                guard !cs.wasAttached else { return false }
                cs.wasAttached = true
                cs.parent = self
                return true
            }
            precondition(attached, "a TaskProgress can join only one parent")
            s.children[ObjectIdentifier(child)] = ChildSlot(child: child, pendingUnitCount: pendingUnitCount)
            s.staleChildren.append(child)
            return flags.load(ordering: .sequentiallyConsistent)
        }
        didChange()
        if inherited & Flags.cancelled != 0 {
            child.cancel()
        } else if inherited & Flags.paused != 0 {
            child.pause()
        }
    }

    /// Brings the cached fractions of stale children up to date and computes this node's value.
    ///
    /// Call with this node's lock held (as `state.withLock { evaluate(&$0) }`). Takes descendants' locks.
    func evaluate(_ s: inout NodeState) -> Evaluation {
        if !s.staleChildren.isEmpty {
            let stale = s.staleChildren
            s.staleChildren.removeAll(keepingCapacity: true)
            for child in stale {
                let id = ObjectIdentifier(child)
                guard var slot = s.children[id] else { continue }  // finished earlier, or a duplicate
                // Mark clean before reading (see the staleness protocol above).
                child.flags.bitwiseOr(Flags.signalsParent, ordering: .sequentiallyConsistent)
                let value = child.state.withLock { cs -> Evaluation in
                    let value = child.evaluate(&cs)
                    if value.isFinished { cs.parent = nil }
                    return value
                }
                let counted = slot.pendingUnitCount > 0
                if slot.isIndeterminate && counted { s.indeterminateChildren -= 1 }
                s.childUnits -= Double(slot.pendingUnitCount) * slot.fraction
                if value.isFinished {
                    // The child leaves the tree; its pending units become completed units here.
                    child.flags.bitwiseAnd(~Flags.signalsParent, ordering: .sequentiallyConsistent)
                    s.children[id] = nil
                    completed.wrappingAdd(slot.pendingUnitCount, ordering: .sequentiallyConsistent)
                } else {
                    slot.fraction = value.fraction
                    slot.isIndeterminate = value.isIndeterminate
                    s.children[id] = slot
                    s.childUnits += Double(slot.pendingUnitCount) * value.fraction
                    if value.isIndeterminate && counted { s.indeterminateChildren += 1 }
                }
            }
            // Deltas in floating point drift by an ulp or so; an empty set of children has exactly zero.
            if s.children.isEmpty { s.childUnits = 0 }
        }
        let total = total.load(ordering: .sequentiallyConsistent)
        let done = completed.load(ordering: .sequentiallyConsistent)
        let fraction: Double
        if total > 0, done >= total {
            fraction = 1  // finished reads exactly 1, whatever ulps the children's deltas left behind
        } else if total > 0 {
            fraction = min(1, max(0, (Double(done) + s.childUnits) / Double(total)))
        } else {
            fraction = 0
        }
        return Evaluation(
            fraction: fraction,
            isIndeterminate: total < 0 || s.indeterminateChildren > 0,
            isFinished: total > 0 && done >= total,
            effectiveUnits: fraction * Double(max(total, 0)),
            total: total,
            completed: done
        )
    }

    /// The slow path of a change: marks this node stale in its parent (and so on up while each ancestor
    /// was clean) and schedules deliveries for observers whose signalling bit is set along the way.
    func propagateChange() {
        var node = self
        while true {
            let old = node.flags.bitwiseAnd(~Flags.signalling, ordering: .sequentiallyConsistent).oldValue
            if old & Flags.signalsObservers != 0 {
                node.notifyObservers()
            }
            guard old & Flags.signalsParent != 0,
                  let parent = node.state.withLock({ $0.parent })
            else { return }
            parent.state.withLock { $0.staleChildren.append(node) }
            guard parent.flags.load(ordering: .sequentiallyConsistent) & Flags.signalling != 0 else { return }
            node = parent
        }
    }
}
