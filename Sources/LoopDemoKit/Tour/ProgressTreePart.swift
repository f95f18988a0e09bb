import LoopKit
import Synchronization

/// Three jobs on LoopGroup workers, each with its own bar, under one total: a TaskProgress tree observed
/// on the loop, with deliveries coalesced to at most one per iteration.
public struct ProgressTreePart: TourPart {
    public let id = "progress-tree"
    public let title = "Progress tree"
    public let jobs: [(name: String, items: Int)]
    public let nanosecondsPerItem: UInt64

    public init(settings: TourSettings) {
        let names = ["checksum", "compress", "index"]
        jobs = zip(names, settings.treeItems).map { (name: $0, items: $1) }
        nanosecondsPerItem = settings.nanosecondsPerItem
    }

    public var blurb: String {
        "\(jobs.count) jobs on \(jobs.count) LoopGroup worker threads, each a child of one TaskProgress; "
            + "the bars are observed on this loop, coalesced to at most one delivery per iteration."
    }

    /// Counters shared by the workers and the loop.
    final class Counters: Sendable {
        let workerUpdates = Atomic<Int>(0)
        let deliveries = Atomic<Int>(0)
        let finishedJobs = Atomic<Int>(0)
        let checksum = Atomic<UInt64>(0)
        let outcomes = Lock<[String: String]>([:])
    }

    public func run(_ context: PartContext) throws -> PartOutcome {
        let loop = context.loop
        let out = context.output
        let id = self.id
        let work = SyntheticWork.calibrated(nanosecondsPerItem: nanosecondsPerItem)
        let workers = try LoopGroup(threads: jobs.count, name: "demo-tree")
        defer { workers.shutdown() }
        let counters = Counters()
        let total = TaskProgress.discrete(totalUnitCount: Int64(jobs.count), unitName: ProgressUnitName(singular: "job", plural: "jobs"))
        let jobCount = jobs.count
        let startIteration = loop.iteration
        let start = now()

        var observations: [ProgressObservation] = []
        var children: [TaskProgress] = []
        for (index, job) in jobs.enumerated() {
            // One child per job, worth one unit of the total.
            let child = TaskProgress.discrete(totalUnitCount: Int64(job.items))
            total.addChild(child, withPendingUnitCount: 1)
            children.append(child)
            let label = job.name.padding(to: 8)
            observations.append(child.observe(on: loop) { snapshot in
                counters.deliveries.add(1, ordering: .relaxed)
                out.progress(part: id, key: "job\(index)", label: label, snapshot: snapshot, plainStep: 0.5, jsonStep: 0.25)
            })
            let worker = workers.loops[index % workers.loops.count]
            let name = job.name
            let items = job.items
            try worker.enqueue {
                // On the worker: each chunk increments the job's child progress (lock-free, any thread);
                // cancelling the child (or the total, which cascades) cancels the worker's job.
                let job = try? worker.process(0..<items, eachChunk: { slice in
                    var sum: UInt64 = 0
                    for item in slice { sum &+= work(item) }
                    counters.checksum.wrappingAdd(sum, ordering: .relaxed)
                    child.increment(by: Int64(slice.count))
                    counters.workerUpdates.add(1, ordering: .relaxed)
                }, completion: { outcome in
                    counters.outcomes.withLock { $0[name] = outcome.description }
                    if counters.finishedJobs.add(1, ordering: .acquiringAndReleasing).newValue == jobCount {
                        try? loop.enqueue { loop.stop() }
                    }
                })
                child.cancellationHandler = { job?.cancel() }
            }
        }
        observations.append(total.observe(on: loop) { snapshot in
            counters.deliveries.add(1, ordering: .relaxed)
            out.progress(part: id, key: "total", label: "total   ", snapshot: snapshot, plainStep: 0.25, jsonStep: 0.1)
        })
        // Cancelling the total cascades to the children and from them to the workers' jobs.
        context.onCancel { total.cancel() }
        try loop.run()
        for observation in observations { observation.cancel() }
        out.progress(part: id, key: "total", label: "total   ", snapshot: total.snapshot(), plainStep: 0.25, jsonStep: 0.1)

        let elapsed = now() - start
        let iterations = loop.iteration - startIteration
        let outcomes = counters.outcomes.withLock { $0 }
        let updates = counters.workerUpdates.load(ordering: .relaxed)
        let deliveries = counters.deliveries.load(ordering: .relaxed)
        out.clearLive()
        for (job, child) in zip(jobs, children) { out.keepBar(label: job.name.padding(to: 8), snapshot: child.snapshot()) }
        out.keepBar(label: "total   ", snapshot: total.snapshot())
        let items = children.reduce(0) { $0 + Int($1.completedUnitCount) }
        out.line("  \(jobs.map { "\($0.name) \(outcomes[$0.name] ?? "?")" }.joined(separator: ", ")) in \(formatNanoseconds(elapsed)) "
                 + "(\(grouped(items)) items on \(workers.loops.count) threads)",
                 part: id, event: "result",
                 fields: [("jobs", .object(jobs.map { ($0.name, .string(outcomes[$0.name] ?? "?")) })),
                          ("nanoseconds", .number(elapsed)), ("items", .number(items))])
        out.line("  \(grouped(updates)) chunks on the workers (each a progress increment) reached this loop as \(out.bold(grouped(deliveries))) "
                 + "deliveries over \(grouped(iterations)) iterations (4 observers, at most one delivery each per iteration)",
                 part: id, event: "result",
                 fields: [("workerUpdates", .number(updates)), ("deliveries", .number(deliveries)), ("iterations", .number(iterations))])
        return outcomes.values.allSatisfy { $0 == "succeeded" } && !context.isCancelled ? .completed : .cancelled
    }
}

extension String {
    /// The string padded with spaces to `width` characters.
    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
