import Foundation
import LoopKit
import Synchronization

/// Row 7: 1M progress increments across four children of one parent, with one observer on the parent.
///
/// LoopKit: a parent (total 4) with four children (total 250,000 each, 1 pending unit each), increments
/// round-robin over the children on the loop thread, one non-blocking loop iteration every 10,000
/// increments (and, as an extra figure, every 100), so the observer's deliveries run while the increments
/// go on. Deliveries are counted per iteration. Foundation: the same tree of `Progress`, one thread
/// (swift-corelibs-foundation has no KVO, so it cannot be observed at all).
enum ProgressIncrements {
    static let every10k = "LoopKit, observer, iteration every 10,000"
    static let every100 = "LoopKit, observer, iteration every 100"
    static let foundationPeer = "Foundation Progress (no observer possible)"

    static func run(_ options: Options) throws -> [Row] {
        let n = options.count(1_000_000, quick: 100_000)
        let perChild = n / 4
        let loop = try EventLoop()
        var comparison = Comparison(options)
        var deliveryNotes: [String] = []

        func loopKitRun(every: Int) throws -> UInt64 {
            let (elapsed, note) = try loopKitIncrements(loop, n, every: every)
            deliveryNotes.append(note)
            return elapsed
        }

        // Added LoopKit, peer, LoopKit: the runs alternate.
        comparison.loopKit(every10k, operations: n) { try loopKitRun(every: 10_000) }
        comparison.peer(foundationPeer, operations: n) { foundationIncrements(n) }
        comparison.loopKit(every100, operations: n) { try loopKitRun(every: 100) }

        let figures = try comparison.run()
        loop.shutdown()
        let lastNotes = deliveryNotes.suffix(2).joined(separator: "; ")
        return [
            Row(scenario: "1M progress increments with one observer", unit: .nanoseconds,
                loopKit: figures[every10k], peers: figures.peers(foundationPeer),
                goal: .atMostNanoseconds(20),
                note: "4 children × \(perChild), round-robin, one thread; last runs: \(lastNotes) (goal ≤ 1 per iteration)."),
            Row(scenario: "1M progress increments, iteration every 100", unit: .nanoseconds,
                loopKit: figures[every100], peers: figures.peers(foundationPeer), goal: .none, note: nil),
        ]
    }
}

extension ProgressIncrements {
    /// LoopKit: `n` increments round-robin over four children of an observed parent, one non-blocking
    /// iteration every `every` increments; returns the elapsed nanoseconds and a note on the deliveries.
    static func loopKitIncrements(_ loop: EventLoop, _ n: Int, every: Int) throws -> (elapsed: UInt64, note: String) {
        let stats = DeliveryStats()
        let parent = TaskProgress.discrete(totalUnitCount: 4)
        let children = (0..<4).map { _ in TaskProgress.discrete(totalUnitCount: Int64(n / 4)) }
        for child in children { parent.addChild(child, withPendingUnitCount: 1) }
        let observation = parent.observe(on: loop) { stats.record($0, iteration: loop.iteration) }
        try loop.runOnce(blocking: false)
        let startIteration = loop.iteration
        let start = monotonicNanoseconds()
        var i = 0
        while i < n {
            let end = min(i + every, n)
            while i < end {
                children[i & 3].increment()
                i += 1
            }
            try loop.runOnce(blocking: false)
        }
        let elapsed = monotonicNanoseconds() - start
        while try loop.runOnce(blocking: false) > 0 {}
        let summary = stats.summary
        check(summary.maxPerIteration <= 1, "more than one delivery in an iteration")
        check(summary.last == 1, "the final delivery was \(summary.last), not 1.0")
        observation.cancel()
        let note = "every \(every): \(summary.count) deliveries over \(loop.iteration - startIteration) "
            + "iterations, at most \(summary.maxPerIteration) per iteration, last fraction \(summary.last)"
        return (elapsed, note)
    }

    /// Foundation: the same tree of `Progress`, `n` increments round-robin on this thread.
    static func foundationIncrements(_ n: Int) -> UInt64 {
        let parent = Progress(totalUnitCount: 4)
        let children = (0..<4).map { _ in Progress(totalUnitCount: Int64(n / 4), parent: parent, pendingUnitCount: 1) }
        let start = monotonicNanoseconds()
        for i in 0..<n { children[i & 3].completedUnitCount += 1 }
        let elapsed = monotonicNanoseconds() - start
        check(parent.fractionCompleted == 1, "Foundation's parent ended at \(parent.fractionCompleted)")
        return elapsed
    }
}

/// Counts an observer's deliveries per loop iteration.
private final class DeliveryStats: Sendable {
    private struct State {
        var count = 0
        var iteration: UInt64 = .max
        var inIteration = 0
        var maxPerIteration = 0
        var last = 0.0
    }

    private let state = Mutex(State())

    func record(_ snapshot: ProgressSnapshot, iteration: UInt64) {
        state.withLock { s in
            s.count += 1
            if s.iteration == iteration { s.inIteration += 1 } else { (s.iteration, s.inIteration) = (iteration, 1) }
            s.maxPerIteration = max(s.maxPerIteration, s.inIteration)
            s.last = snapshot.fractionCompleted
        }
    }

    var summary: (count: Int, maxPerIteration: Int, last: Double) {
        state.withLock { ($0.count, $0.maxPerIteration, $0.last) }
    }
}
