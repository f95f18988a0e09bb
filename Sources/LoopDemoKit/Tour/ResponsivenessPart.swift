import LoopKit

/// A million items through ArrayProcessor with a live bar, while a timer animates a spinner; then the
/// longest loop iteration seen, and the same work in per-item mode for comparison.
public struct ResponsivenessPart: TourPart {
    public let id = "responsiveness"
    public let title = "Responsiveness"
    public let items: Int
    public let budget: ProcessingBudget
    public let perItemItems: Int?
    public let nanosecondsPerItem: UInt64

    public init(settings: TourSettings) {
        items = settings.items
        budget = settings.budget
        perItemItems = settings.perItemItems
        nanosecondsPerItem = settings.nanosecondsPerItem
    }

    public var blurb: String {
        "\(grouped(items)) items (about \(formatNanoseconds(nanosecondsPerItem)) of work each) through "
            + "ArrayProcessor, \(budget.isPerItem ? "one item per iteration" : "\(formatNanoseconds(budget.nanoseconds)) per iteration"), "
            + "while a timer animates a spinner."
    }

    /// What the loop thread measures while the job runs.
    struct Measurements {
        var lastDrain: UInt64 = 0
        var lastDrainIteration: UInt64 = 0
        var longestIteration: UInt64 = 0
        /// The loop thread's CPU time at the last drain, and the most CPU time one iteration used: the
        /// longest iteration minus this is time the thread waited for a core, not LoopKit's overshoot.
        var lastDrainCPU: UInt64 = 0
        var longestIterationOnCPU: UInt64 = 0
        var probing = true
        var spinnerFrames = 0
        var lastFrame: UInt64 = 0
        var longestFrameGap: UInt64 = 0
    }

    /// One processing run's figures.
    struct RunFigures {
        var outcome: ProcessingOutcome
        var done: Int
        var nanoseconds: UInt64
        var iterations: UInt64
    }

    public func run(_ context: PartContext) throws -> PartOutcome {
        let loop = context.loop
        let out = context.output
        let work = SyntheticWork.calibrated(nanosecondsPerItem: nanosecondsPerItem)
        let measured = LoopBound(Measurements(), on: loop)
        let spinnerPeriod = Duration.milliseconds(80)

        // The probe: a job that re-queues itself, so it runs in every iteration's drain (phase 3). The time
        // between two of its runs is one whole iteration, the ArrayProcessor's chunk included.
        @Sendable func probe() {
            let t = now()
            let cpu = threadCPUTime()
            let iteration = loop.iteration
            let keepGoing = measured.withValue { m in
                if iteration == m.lastDrainIteration + 1 {
                    m.longestIteration = max(m.longestIteration, t - m.lastDrain)
                    m.longestIterationOnCPU = max(m.longestIterationOnCPU, cpu - m.lastDrainCPU)
                }
                m.lastDrain = t
                m.lastDrainCPU = cpu
                m.lastDrainIteration = iteration
                return m.probing
            }
            if keepGoing { try? loop.enqueue(probe) }
        }
        measured.value.lastDrain = now()
        measured.value.lastDrainCPU = threadCPUTime()
        measured.value.lastDrainIteration = loop.iteration
        try loop.enqueue(probe)

        // The spinner: a repeating timer; it keeps turning while the items are processed.
        let frames = Array("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
        measured.value.lastFrame = now()
        let spinner = try loop.schedule(after: spinnerPeriod, repeating: spinnerPeriod) {
            let t = now()
            let m = measured.withValue { m in
                m.spinnerFrames += 1
                m.longestFrameGap = max(m.longestFrameGap, t - m.lastFrame)
                m.lastFrame = t
                return m
            }
            out.setLive("spinner", "\(out.cyan(String(frames[m.spinnerFrames % frames.count]))) the loop stays responsive: "
                        + "spinner frame \(m.spinnerFrames) · iteration \(grouped(loop.iteration)) · "
                        + "longest iteration so far \(formatNanoseconds(m.longestIteration))")
        }
        defer { spinner.cancel() }

        // The main run: a live bar from the job's TaskProgress, observed on the loop (coalesced).
        let main = try process(context, work: work, count: items, budget: budget, showBar: true)
        measured.value.probing = false
        let m = measured.value
        let checksumNote = "checksum \(String(main.checksum & 0xFFFF, radix: 16))"
        report(context, label: budget.isPerItem ? "per-item mode" : "budget mode (\(budget))", main.figures)
        out.line("  longest loop iteration: \(out.bold(formatNanoseconds(m.longestIteration)))"
                 + (budget.isPerItem ? "" : " (budget \(formatNanoseconds(budget.nanoseconds)))")
                 + ", longest on the CPU \(formatNanoseconds(m.longestIterationOnCPU))"
                 + " · spinner: \(m.spinnerFrames) frames every 80 ms, "
                 + "longest gap \(formatNanoseconds(m.longestFrameGap)) · \(checksumNote)",
                 part: id, event: "result",
                 fields: [("longestIterationNs", .number(m.longestIteration)),
                          ("longestIterationOnCPUNs", .number(m.longestIterationOnCPU)), ("spinnerFrames", .number(m.spinnerFrames)),
                          ("longestSpinnerGapNs", .number(m.longestFrameGap))])
        guard main.figures.outcome.isSuccess, !context.isCancelled else {
            return .cancelled
        }

        // The same work in per-item mode: one item per iteration, in the fixed per-item order.
        if let perItemItems, !budget.isPerItem {
            let perItem = try process(context, work: work, count: perItemItems, budget: .perItem, showBar: false)
            report(context, label: "per-item mode", perItem.figures)
            let budgetRate = rate(main.figures.done, in: main.figures.nanoseconds)
            let perItemRate = rate(perItem.figures.done, in: perItem.figures.nanoseconds)
            out.line("  budget mode ran \(fixed(budgetRate / max(perItemRate, 1), decimals: 1))× the items per second of "
                     + "per-item mode, in \(grouped(main.figures.iterations)) iterations instead of one per item.",
                     part: id, event: "comparison",
                     fields: [("speedup", .double(budgetRate / max(perItemRate, 1)))])
            if !perItem.figures.outcome.isSuccess { return .cancelled }
        }
        return .completed
    }

    /// Runs one processing job to its end, with a bar when asked; returns its figures.
    private func process(
        _ context: PartContext, work: SyntheticWork, count: Int, budget: ProcessingBudget, showBar: Bool
    ) throws -> (figures: RunFigures, checksum: UInt64) {
        let loop = context.loop
        let out = context.output
        let id = self.id
        var checksum: UInt64 = 0
        var figures = RunFigures(outcome: .cancelled, done: 0, nanoseconds: 0, iterations: 0)
        let start = now()
        let firstIteration = loop.iteration
        let job = try loop.process(0..<count, budget: budget, eachChunk: { slice in
            for item in slice { checksum &+= work(item) }
        }, update: { done, _ in
            figures.done = done
        }, completion: { outcome in
            figures.outcome = outcome
            figures.nanoseconds = now() - start
            figures.iterations = loop.iteration - firstIteration
            loop.stop()
        })
        var observation: ProgressObservation?
        if showBar {
            observation = job.progress.observe(on: loop) { snapshot in
                out.progress(part: id, key: "bar", label: "items", snapshot: snapshot)
            }
        }
        context.onCancel { job.cancel() }
        try loop.run()
        observation?.cancel()
        if showBar {
            // The final state, whatever the coalescing delivered last.
            out.progress(part: id, key: "bar", label: "items", snapshot: job.progress.snapshot())
            out.clearLive()
            out.keepBar(label: "items", snapshot: job.progress.snapshot())
        }
        return (figures, checksum)
    }

    private func report(_ context: PartContext, label: String, _ f: RunFigures) {
        let out = context.output
        let perIteration = f.iterations > 0 ? Int((Double(f.done) / Double(f.iterations)).rounded()) : 0
        let status = f.outcome.isSuccess ? "" : " — \(out.yellow(f.outcome.description)) at \(grouped(f.done)) of the items"
        out.line("  \(label): \(grouped(f.done)) items in \(formatNanoseconds(f.nanoseconds)) · "
                 + "\(out.bold(formatRate(rate(f.done, in: f.nanoseconds)))) items/s · \(grouped(f.iterations)) iterations "
                 + "(\(grouped(perIteration)) item\(perIteration == 1 ? "" : "s") each)\(status)",
                 part: id, event: "result",
                 fields: [("mode", .string(label)), ("outcome", .string(f.outcome.description)), ("items", .number(f.done)),
                          ("nanoseconds", .number(f.nanoseconds)), ("iterations", .number(f.iterations)),
                          ("itemsPerSecond", .double(rate(f.done, in: f.nanoseconds)))])
    }
}
