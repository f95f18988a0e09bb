// The loop-thread side of an array-processing job: the index, the closures, the budget arithmetic.
//
// Per-item mode, one `|` per iteration (the per-item order):
//     start: U(0) |  step: P(0) |  step: U(1) P(1) | … |  step: U(n-1) P(n-1) |  step: U(n) C
// Budget mode:
//     start: U(0) |  step: P(0…a) U(a) |  step: P(a…b) U(b) | … |  step: P(…n) U(n) C
// (or `… | step: P(…n) U(n) | step: C` when the last chunk used more than half the budget, so that the
// completion does not push that iteration over it).
// Each step queues the next with the loop's next-iteration queue, so I/O, timers and other work run
// between two steps (R4).

/// The state of one job, confined to its loop's thread (it lives in a ``LoopConfined`` box).
final class ProcessingRun {
    let loop: EventLoop
    let job: ProcessingJob
    let total: Int
    /// Nanoseconds of items per iteration; 0 is per-item mode.
    let budget: UInt64
    /// Processes items `next..<end`, advancing `next` past each item that returned.
    let runItems: (inout Int, Int) throws -> Void
    let update: (Int, Int) -> Void
    let completion: (ProcessingOutcome) -> Void

    /// The next item to process.
    var next = 0
    /// The last `done` given to `update`, or -1.
    var reported = -1
    /// Items between two clock reads at the start of an iteration, learnt from the measured cost.
    var stride = 1
    /// The last measured cost of one item, in nanoseconds; 0 until measured.
    var nanosecondsPerItem = 0.0
    /// When the previous step ended, on the loop's clock; 0 before the first chunk.
    var lastStepEnd: UInt64 = 0
    /// The rest of an iteration (poll, timers, I/O, other queued work, progress deliveries), as measured
    /// between two steps: the chunk leaves room for it, so the whole iteration stays near the budget.
    var restOfIteration: UInt64 = 0
    /// How far a chunk lately ran past its deadline, at least one check window: a stride whose thread lost
    /// its core mid-way (a busy machine) ends later than the measured cost says, and the next chunks leave
    /// room for that as they do for the rest of the iteration.
    var overshoot: UInt64 = 0

    init(loop: EventLoop, job: ProcessingJob, total: Int, budget: UInt64,
         runItems: @escaping (inout Int, Int) throws -> Void,
         update: @escaping (Int, Int) -> Void,
         completion: @escaping (ProcessingOutcome) -> Void) {
        self.loop = loop
        self.job = job
        self.total = total
        self.budget = budget
        self.runItems = runItems
        self.update = update
        self.completion = completion
    }

    /// The share of the budget between two clock reads: the most an iteration overshoots by when the
    /// measured cost holds (4 ms budget: 0.5 ms).
    static let checkDivisor: UInt64 = 8

    /// The most of a budget the rest of an iteration is granted: a chunk always keeps an eighth of the
    /// budget (three quarters for the rest, an eighth for the check window), so the job goes on however
    /// busy its loop is.
    static func largestRest(of budget: UInt64) -> UInt64 { budget / 4 * 3 }

    /// The most of a budget the chunk leaves unused, for the rest of the iteration and its own overshoot
    /// together: seven eighths, so a chunk always keeps an eighth and the job goes on.
    static func largestReserve(of budget: UInt64) -> UInt64 { budget / 8 * 7 }

    /// Reports `next` to the progress and to `update`, unless it was already reported.
    func report() {
        guard reported != next else { return }
        reported = next
        job.progress.completedUnitCount = Int64(next)
        update(next, total)
    }

    /// Queues the next step for the loop's next iteration; a loop that shut down cancels the job (R10).
    func scheduleStep(_ box: LoopConfined<ProcessingRun>) {
        do {
            try loop.append(Job { box.value.step(box) })
        } catch {
            finish(.cancelled)
        }
    }

    /// One iteration's worth of the job.
    func step(_ box: LoopConfined<ProcessingRun>) {
        if job.control.isCancelRequested {
            finish(.cancelled)
            return
        }
        do {
            if budget == 0 {
                if next == total {
                    report()
                    finish(.succeeded)
                    return
                }
                if next > 0 { report() }
                try runItems(&next, next + 1)
            } else {
                let start = loop.timeSource.nanoseconds()
                if lastStepEnd > 0, start > lastStepEnd {
                    // The largest rest lately: a new sample counts at once, an old one fades by an eighth
                    // an iteration. The rest varies (the completions of offloaded work arrive in bursts),
                    // and a chunk sized for its average leaves every larger one over the budget.
                    let rest = min(start - lastStepEnd, Self.largestRest(of: budget))
                    restOfIteration = max(rest, restOfIteration - restOfIteration / 8)
                }
                try runChunk(from: start)
                report()
                let end = loop.timeSource.nanoseconds()
                lastStepEnd = end
                // The completion runs in this iteration only if the chunk left half the budget for it.
                if next == total, end &- start <= budget / 2 {
                    finish(.succeeded)
                    return
                }
            }
        } catch {
            finish(.failed(error))
            return
        }
        scheduleStep(box)
    }

    /// Budget mode: items until the budget is spent, reading the clock once per `stride` items and
    /// sizing each stride from the measured cost so that it takes at most a small share of the budget.
    ///
    /// The chunk's share is the budget less the rest of the iteration as lately measured (at most three
    /// quarters of the budget) and less one check window, the most a stride runs past its deadline when the
    /// measured cost holds, or the largest overshoot lately when it did not (at most seven eighths in all):
    /// the iteration as a whole, not only its chunk, keeps within the budget.
    private func runChunk(from start: UInt64) throws {
        let clock = loop.timeSource
        let window = max(1, budget / Self.checkDivisor)
        let reserve = min(restOfIteration, Self.largestRest(of: budget)) + max(window, overshoot)
        let deadline = start &+ (budget - min(reserve, Self.largestReserve(of: budget)))
        var lastRead = start
        var stride = max(1, min(self.stride, total - next))
        while next < total {
            let before = next
            try runItems(&next, min(total, next + stride))
            let now = clock.nanoseconds()
            if next > before, now > lastRead {
                nanosecondsPerItem = Double(now - lastRead) / Double(next - before)
            }
            lastRead = now
            if now >= deadline || job.control.isCancelRequested { break }
            // Size the next stride to fit both the check window and what is left of the budget, growing
            // at most twofold per read so that one cheap stretch cannot launch a huge stride.
            let room = min(window, deadline - now)
            let fit = nanosecondsPerItem > 0 ? Double(room) / nanosecondsPerItem : Double(total)
            stride = max(1, min(Int(min(fit, Double(total))), stride * 2, total))
        }
        if lastRead &- start > budget { loop.noteBudgetOverrun() }
        // The largest overshoot lately, as for the rest: a new one counts at once, an old one fades by an
        // eighth an iteration.
        let overran = lastRead > deadline ? lastRead - deadline : 0
        overshoot = max(overran, overshoot - overshoot / 8)
        // The next iteration starts with a stride that fills one check window at the measured cost.
        if nanosecondsPerItem > 0 {
            self.stride = max(1, Int(min(Double(window) / nanosecondsPerItem, Double(total))))
        } else {
            self.stride = stride
        }
    }

    /// Completes the job exactly once.
    func finish(_ outcome: ProcessingOutcome) {
        let code: UInt8 = switch outcome {
        case .succeeded: ProcessingControl.completedSucceeded
        case .cancelled: ProcessingControl.completedCancelled
        case .failed: ProcessingControl.completedFailed
        }
        job.control.complete(code)
        completion(outcome)
    }
}
