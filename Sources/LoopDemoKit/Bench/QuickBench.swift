import LoopKit
import Synchronization

/// Quick in-process figures: measured now, on this machine, in this build (not the Benchmarks package's
/// careful runs against peers).
public struct QuickBench: Sendable {
    /// Operations per figure.
    public let operations: Int
    /// Cross-thread round trips.
    public let roundTrips: Int

    public init(operations: Int = 1_000_000, roundTrips: Int = 20_000) {
        self.operations = operations
        self.roundTrips = roundTrips
    }

    /// One figure.
    public struct Figure: Sendable {
        public let id: String
        public let label: String
        public let nanosecondsPerOperation: Double
        public let operations: Int
    }

    final class Tally: Sendable {
        let count = Atomic<Int>(0)
        let nanoseconds = Atomic<UInt64>(0)
    }

    /// Runs every figure on a fresh loop owned by the calling thread, and prints each as it is measured.
    public func run(output out: DemoOutput) throws -> [Figure] {
        var figures: [Figure] = []
        func record(_ figure: Figure) {
            figures.append(figure)
            out.line("  \(figure.label.padding(to: 48)) \(out.bold(fixed(figure.nanosecondsPerOperation, decimals: 1))) ns"
                     + "  (\(grouped(figure.operations)) ops)", part: "bench", event: "figure",
                     fields: [("figure", .string(figure.id)), ("nsPerOp", .double(figure.nanosecondsPerOperation)),
                              ("operations", .number(figure.operations))])
        }
        out.line(out.bold("LoopDemo bench") + " — quick in-process figures (make bench runs the full comparison)",
                 part: "bench", event: "start")
        record(try enqueueAndRun())
        record(try iterationWithPoll())
        record(try crossThreadEnqueue())
        record(try crossThreadRoundTrip())
        return figures
    }

    /// Same thread: enqueue `operations` closures, then run them (one drain).
    func enqueueAndRun() throws -> Figure {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let tally = Tally()
        let start = now()
        for _ in 0..<operations { try loop.enqueue { tally.count.add(1, ordering: .relaxed) } }
        while tally.count.load(ordering: .relaxed) < operations { try loop.runOnce(blocking: false) }
        return Figure(id: "enqueue", label: "enqueue + run, same thread", nanosecondsPerOperation: per(now() - start, operations), operations: operations)
    }

    /// A chain: each job enqueues the next, so each runs in its own iteration, with an I/O poll between.
    func iterationWithPoll() throws -> Figure {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let count = operations / 2
        let tally = Tally()
        @Sendable func link() {
            if tally.count.add(1, ordering: .relaxed).newValue < count { try? loop.enqueue(link) } else { loop.stop() }
        }
        let start = now()
        try loop.enqueue(link)
        let firstIteration = loop.iteration
        try loop.run()
        let iterations = Int(loop.iteration - firstIteration)
        return Figure(id: "iteration", label: "one iteration (poll + drain of one job)", nanosecondsPerOperation: per(now() - start, iterations), operations: iterations)
    }

    /// One producer thread enqueues; the loop runs them.
    func crossThreadEnqueue() throws -> Figure {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let producer = try LoopGroup(threads: 1, name: "bench-producer")
        defer { producer.shutdown() }
        let tally = Tally()
        let operations = self.operations
        let start = now()
        try producer.next().enqueue {
            for _ in 0..<operations {
                try? loop.enqueue {
                    if tally.count.add(1, ordering: .relaxed).newValue == operations { loop.stop() }
                }
            }
        }
        try loop.run()
        return Figure(id: "crossThreadEnqueue", label: "cross-thread enqueue, one producer", nanosecondsPerOperation: per(now() - start, operations), operations: operations)
    }

    /// Another thread calls invokeAndWait in a loop: each call wakes the loop, runs, and wakes the caller.
    func crossThreadRoundTrip() throws -> Figure {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let caller = try LoopGroup(threads: 1, name: "bench-caller")
        defer { caller.shutdown() }
        let roundTrips = self.roundTrips
        let tally = Tally()
        try caller.next().enqueue {
            let start = now()
            for _ in 0..<roundTrips { _ = try? loop.invokeAndWait { tally.count.add(1, ordering: .relaxed) } }
            let elapsed = now() - start
            try? loop.invoke {
                tally.nanoseconds.store(elapsed, ordering: .relaxed)
                loop.stop()
            }
        }
        try loop.run()
        let total = tally.nanoseconds.load(ordering: .relaxed)
        return Figure(id: "roundTrip", label: "cross-thread invokeAndWait round trip", nanosecondsPerOperation: per(total, roundTrips), operations: roundTrips)
    }

    private func per(_ nanoseconds: UInt64, _ count: Int) -> Double { Double(nanoseconds) / Double(max(count, 1)) }
}
