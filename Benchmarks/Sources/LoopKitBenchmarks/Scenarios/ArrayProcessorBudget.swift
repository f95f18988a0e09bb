import LoopKit

/// Row 6: 1M trivial items through `EventLoop.process` in budget mode, against a plain `for` loop; and a
/// row for the longest iteration with items of 2 µs, where the budget decides each chunk (goal: budget
/// + 1 ms), in wall-clock and in the loop thread's CPU time.
///
/// LoopKit: `process(items, budget: .default)` under `run()`; `each` adds the item to a global, the
/// completion stops the loop. The time includes the loop's iterations (a poll between chunks). The
/// longest iteration is the longest gap between two `update` calls (one per iteration).
/// Peers, same items, same work: a plain `for` loop with the work written inline (the compiler may
/// unroll or vectorise it), and a plain `for` loop calling the same `each` closure through an opaque
/// reference (the cost any closure-taking API pays per item).
enum ArrayProcessorBudget {
    static let loopKitName = "LoopKit process(eachChunk:), budget 4 ms"
    static let perItemName = "LoopKit process(each:), budget 4 ms"
    static let inlinePeer = "plain for loop, work inline"
    static let closurePeer = "plain for loop, calling the same closure"

    static func run(_ options: Options) throws -> [Row] {
        let n = options.count(1_000_000, quick: 100_000)
        let items = Array(0..<n)
        let expected = n * (n - 1) / 2
        let loop = try EventLoop()
        var comparison = Comparison(options)
        var longestIteration: UInt64 = 0
        var iterationsUsed: UInt64 = 0

        comparison.loopKit(loopKitName, operations: n) {
            benchCounter = 0
            processLastUpdate = 0
            processLongestGap = 0
            let startIteration = loop.iteration
            let start = monotonicNanoseconds()
            processLastUpdate = start
            try loop.process(items, budget: .default, eachChunk: { slice in
                for item in slice { benchCounter &+= item }
            }, update: { _, _ in
                let now = monotonicNanoseconds()
                processLongestGap = max(processLongestGap, now - processLastUpdate)
                processLastUpdate = now
            }, completion: { _ in loop.stop() })
            try loop.run()
            let elapsed = monotonicNanoseconds() - start
            check(benchCounter == expected, "LoopKit processed the wrong items")
            longestIteration = max(longestIteration, processLongestGap)
            iterationsUsed = loop.iteration - startIteration
            return elapsed
        }

        comparison.peer(inlinePeer, operations: n) {
            benchCounter = 0
            let start = monotonicNanoseconds()
            for item in items { benchCounter &+= item }
            let elapsed = monotonicNanoseconds() - start
            check(benchCounter == expected, "plain loop processed the wrong items")
            return elapsed
        }

        comparison.loopKit(perItemName, operations: n) {
            benchCounter = 0
            try loop.process(items, budget: .default, each: { benchCounter &+= $0 },
                             completion: { _ in loop.stop() })
            let start = monotonicNanoseconds()
            try loop.run()
            let elapsed = monotonicNanoseconds() - start
            check(benchCounter == expected, "LoopKit processed the wrong items")
            return elapsed
        }

        comparison.peer(closurePeer, operations: n) {
            benchCounter = 0
            let each = opaque { benchCounter &+= $0 }
            let start = monotonicNanoseconds()
            for item in items { each(item) }
            let elapsed = monotonicNanoseconds() - start
            check(benchCounter == expected, "plain closure loop processed the wrong items")
            return elapsed
        }

        let figures = try comparison.run()

        // The longest iteration with items of real weight (2 µs each, as in the tour), where the budget
        // decides the chunk: 250k items (0.5 s of work) per run, warm-up included.
        let heavy = options.count(250_000, quick: 50_000)
        var longestPerRun: [Double] = []
        var longestOnCPUPerRun: [Double] = []
        var heavyIterations: UInt64 = 0
        for _ in 0...options.runs {
            processLastUpdate = monotonicNanoseconds()
            processLongestGap = 0
            processLastCPU = threadCPUNanoseconds()
            processLongestCPU = 0
            let startIteration = loop.iteration
            try loop.process(0..<heavy, budget: .default, eachChunk: { slice in
                for _ in slice {
                    let end = monotonicNanoseconds() &+ 2_000
                    while monotonicNanoseconds() < end {}
                }
            }, update: { _, _ in
                let now = monotonicNanoseconds()
                let cpu = threadCPUNanoseconds()
                processLongestGap = max(processLongestGap, now - processLastUpdate)
                processLongestCPU = max(processLongestCPU, cpu - processLastCPU)
                processLastUpdate = now
                processLastCPU = cpu
            }, completion: { _ in loop.stop() })
            try loop.run()
            heavyIterations = loop.iteration - startIteration
            longestPerRun.append(Double(processLongestGap))
            longestOnCPUPerRun.append(Double(processLongestCPU))
        }
        loop.shutdown()
        let loopKit = figures[loopKitName]
        var rows = [
            Row(scenario: "1M trivial items through ArrayProcessor (budget mode)", unit: .nanoseconds,
                loopKit: loopKit, peers: figures.peers(inlinePeer, closurePeer),
                goal: .none,
                note: "first figure: eachChunk (a slice per clock read); "
                    + "process(each:) (a closure call per item): \(format(figures[perItemName].median, unit: .nanoseconds)) ns/op. " + "\(n) Int items, each added to a global; LoopKit used \(iterationsUsed) iterations in the "
                    + "last run; longest iteration over all runs \(format(Double(longestIteration) / 1e6, unit: .nanoseconds)) ms "
                    + "(goal ≤ budget + 1 ms = 5 ms)."),
        ]
        let wallMax = format((longestPerRun.max() ?? 0) / 1_000, unit: .nanoseconds)
        let cpuMedian = format(median(longestOnCPUPerRun) / 1_000, unit: .nanoseconds)
        let cpuMax = format((longestOnCPUPerRun.max() ?? 0) / 1_000, unit: .nanoseconds)
        let heavyNote = "\(heavy) items of 2 µs each, \(heavyIterations) iterations per run; median over runs of "
            + "each run's longest iteration (wall clock; max \(wallMax) µs); in the loop thread's CPU time "
            + "\(cpuMedian) µs (max \(cpuMax) µs). Goal: budget + 1 ms."
        // The longest iteration of each run, on the wall clock and in the loop thread's CPU time (the
        // difference is time the thread waited for a core while other processes ran).
        rows.append(Row(
            scenario: "longest iteration, 2 µs items through ArrayProcessor, budget 4 ms", unit: .microseconds,
            loopKit: Figure(median: median(longestPerRun), samples: longestPerRun), peers: [],
            goal: .atMostNanoseconds(5_000_000),
            note: heavyNote))
        // The goal is a ratio to the plain loop: state it as a nanosecond bound from this run's peer.
        if let plain = figures.byName[inlinePeer] {
            rows[0].goal = .atMostNanoseconds(1.5 * plain.median)
        }
        return rows
    }
}

nonisolated(unsafe) private var processLastUpdate: UInt64 = 0
nonisolated(unsafe) private var processLongestGap: UInt64 = 0
nonisolated(unsafe) private var processLastCPU: UInt64 = 0
nonisolated(unsafe) private var processLongestCPU: UInt64 = 0

/// Hides a closure from the optimiser, so the loop calling it cannot inline its body.
@inline(never)
private func opaque(_ body: @escaping (Int) -> Void) -> (Int) -> Void { body }
