import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// `EventLoop.process`: seed 000's array processor, on the loop. Ordering tests step the loop with
/// `LoopDriver` and record with `OrderTrace`; budget tests make each item advance the virtual clock.
@Suite("ArrayProcessor")
struct ArrayProcessorTests {
    struct Failure: Error, Equatable { let item: Int }

    /// Starts a job on `driver`'s loop that records `U(done)`, `P(item)` and `C(outcome)` in `trace`.
    @discardableResult
    func recordedJob<Items: RandomAccessCollection>(
        _ items: Items, on driver: LoopDriver, trace: OrderTrace, budget: ProcessingBudget = .perItem,
        each: @escaping (Items.Element) throws -> Void = { _ in }
    ) throws -> ProcessingJob {
        try driver.loop.process(
            items, budget: budget,
            each: { item in
                trace.record("P(\(item))")
                try each(item)
            },
            update: { done, _ in trace.record("U(\(done))") },
            completion: { outcome in trace.record("C(\(outcome))") })
    }

    // MARK: Per-item mode: the seed's order

    @Test("per-item mode keeps the seed's order, one iteration per '|', U(0) before the call returns")
    func perItemModeKeepsTheSeedOrder() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        try recordedJob(0..<4, on: driver, trace: trace)
        trace.record("returned")
        try driver.runUntilIdle()
        #expect(trace.iterations == "U(0) returned | P(0) | U(1) P(1) | U(2) P(2) | U(3) P(3) | U(4) C(succeeded)")
        #expect(trace.iterationsAreConsecutive)
    }

    @Test("an empty collection reports U(0), then completes in the next iteration")
    func emptyCollectionCompletesInTheNextIteration() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let job = try recordedJob([Int](), on: driver, trace: trace)
        try driver.runUntilIdle()
        #expect(trace.iterations == "U(0) | C(succeeded)")
        #expect(job.isFinished)
    }

    @Test("items are processed by index: duplicates are all processed, once each, in order")
    func duplicatesAreProcessedByIndex() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        try recordedJob(["x", "x", "y", "x"], on: driver, trace: trace, budget: .default)
        try driver.runUntilIdle()
        #expect(trace.labels == ["U(0)", "P(x)", "P(x)", "P(y)", "P(x)", "U(4)", "C(succeeded)"])
    }

    @Test("other queued work runs between two steps of a job (R4)")
    func otherWorkInterleavesWithTheJob() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        try recordedJob(0..<3, on: driver, trace: trace)
        @Sendable func tick(_ n: Int) {
            trace.record("t\(n)")
            if n < 2 { try! loop.enqueue { tick(n + 1) } }
        }
        try loop.enqueue { tick(0) }
        try driver.runUntilIdle()
        #expect(trace.iterations == "U(0) | P(0) t0 | U(1) P(1) t1 | U(2) P(2) t2 | U(3) C(succeeded)")
    }

    // MARK: Thread rules and refusal

    @Test("process off the loop's thread throws wrongThread and calls nothing")
    func processOffTheLoopThreadThrows() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let called = Atomic<Bool>(false)
        let error = onAnotherThread { () -> EventLoopError? in
            do {
                try loop.process([1, 2], each: { _ in called.store(true, ordering: .relaxed) },
                                 update: { _, _ in called.store(true, ordering: .relaxed) },
                                 completion: { _ in called.store(true, ordering: .relaxed) })
                return nil
            } catch {
                return error as? EventLoopError
            }
        }
        #expect(error == .wrongThread(operation: "process(_:budget:each:update:completion:)"))
        try driver.runUntilIdle()
        let anyCalled = called.load(ordering: .relaxed)
        #expect(!anyCalled)
    }

    @Test("a shut-down loop refuses a job with shutDown and calls none of its closures")
    func shutDownLoopRefusesTheJob() throws {
        let driver = try LoopDriver()
        driver.loop.shutdown()
        let trace = OrderTrace(driver.loop)
        #expect(throws: EventLoopError.shutDown) { try recordedJob(0..<3, on: driver, trace: trace) }
        #expect(trace.labels.isEmpty)
    }

    // MARK: Cancellation

    @Test("cancel before the first item: no item runs, completion reports cancelled")
    func cancelBeforeStart() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let job = try recordedJob(0..<3, on: driver, trace: trace)
        job.cancel()
        try driver.runUntilIdle()
        #expect(trace.iterations == "U(0) | C(cancelled)")
        #expect(job.isCancelled && job.isFinished)
        #expect(job.progress.isCancelled)
    }

    @Test("a job started under a cancelled current progress is cancelled before it starts")
    func cancelledParentProgressCancelsBeforeStart() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let parent = TaskProgress.discrete(totalUnitCount: 1)
        parent.cancel()
        let job = try parent.withCurrent(pendingUnitCount: 1) { try recordedJob(0..<3, on: driver, trace: trace) }
        try driver.runUntilIdle()
        #expect(trace.iterations == "U(0) | C(cancelled)")
        #expect(job.isCancelled)
    }

    @Test("cancel midway from another thread: the next step completes with cancelled, no later item runs")
    func cancelMidway() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let job = try recordedJob(0..<5, on: driver, trace: trace)
        try driver.step(2)
        onAnotherThread { job.cancel() }
        try driver.runUntilIdle()
        #expect(trace.iterations == "U(0) | P(0) | U(1) P(1) | C(cancelled)")
        #expect(job.isCancelled && job.isFinished)
    }

    @Test("cancel from inside an item: the item finishes, the job completes with cancelled")
    func cancelFromInsideAnItem() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let holder = Lock<ProcessingJob?>(nil)
        let job = try recordedJob(0..<100, on: driver, trace: trace, budget: .default) { item in
            if item == 10 { holder.withLock { $0?.cancel() } }
        }
        holder.withLock { $0 = job }
        try driver.runUntilIdle()
        // Cheap items on virtual time: the chunk notices the cancel at its next clock read.
        #expect(trace.labels.last == "C(cancelled)")
        #expect(trace.labels.filter { $0.hasPrefix("P(") }.count < 100)
        #expect(!trace.labels.contains("U(100)"))
    }

    @Test("cancel after the job finished does nothing")
    func cancelAfterFinishIsANoOp() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let job = try recordedJob(0..<2, on: driver, trace: trace)
        try driver.runUntilIdle()
        job.cancel()
        job.cancel()
        try driver.runUntilIdle()
        #expect(trace.labels.filter { $0.hasPrefix("C(") } == ["C(succeeded)"])
        #expect(!job.isCancelled)
        #expect(job.isFinished)
        #expect(!job.progress.isCancelled)
        #expect(job.progress.isFinished)
    }

    // MARK: Errors

    @Test("a throwing item stops the job; completion reports that error, once, in the same iteration")
    func throwingEachFailsTheJob() throws {
        for budget in [ProcessingBudget.perItem, .default] {
            let driver = try LoopDriver()
            let trace = OrderTrace(driver.loop)
            let outcome = Lock<ProcessingOutcome?>(nil)
            let completions = Atomic<Int>(0)
            let job = try driver.loop.process(0..<10, budget: budget, each: { item in
                trace.record("P(\(item))")
                if item == 3 { throw Failure(item: item) }
            }, completion: { result in
                completions.add(1, ordering: .relaxed)
                outcome.withLock { $0 = result }
                trace.record("C")
            })
            try driver.runUntilIdle()
            #expect(trace.labels == ["P(0)", "P(1)", "P(2)", "P(3)", "C"])
            #expect(trace.entries.last?.iteration == trace.entries.dropLast().last?.iteration)
            #expect(completions.load(ordering: .relaxed) == 1)
            let failure = outcome.withLock { result -> Failure? in
                if case .failed(let error) = result { return error as? Failure }
                return nil
            }
            #expect(failure == Failure(item: 3))
            #expect(job.isFinished && !job.isCancelled)
        }
    }

    // MARK: Budget mode on virtual time

    @Test("budget mode fills each iteration with items up to the budget less one check window, measured on the loop's clock")
    func budgetModeChunksByMeasuredCost() throws {
        let driver = try LoopDriver()
        let clock = driver.clock
        let perIteration = Lock<[UInt64: Int]>([:])
        let updates = Lock<[Int]>([])
        let loop = driver.loop
        try loop.process(0..<100, budget: .time(.milliseconds(4)), each: { _ in
            perIteration.withLock { $0[loop.iteration, default: 0] += 1 }
            clock.advance(by: .microseconds(100))
        }, update: { done, _ in updates.withLock { $0.append(done) } }, completion: { _ in })
        try driver.runUntilIdle()
        // (4 ms less its eighth, 0.5 ms) / 100 µs = 35 items per iteration, exactly: the last eighth is the
        // room a stride may run past its deadline, so no iteration passes its budget.
        #expect(perIteration.withLock { $0.sorted { $0.key < $1.key }.map(\.value) } == [35, 35, 30])
        #expect(updates.withLock { $0 } == [0, 35, 70, 100])  // U(0), then one update per iteration
    }

    @Test("budget mode never runs items longer than the budget, for cheap items")
    func budgetModeStaysWithinBudget() throws {
        let driver = try LoopDriver()
        let clock = driver.clock
        let loop = driver.loop
        // Item costs cycling 7, 19, 3, 41, 11 µs: far below the 2 ms budget, never the same twice running.
        let costs: [Int64] = [7, 19, 3, 41, 11]
        let spans = Lock<[UInt64: (first: UInt64, last: UInt64)]>([:])
        try loop.process(0..<20_000, budget: .time(.milliseconds(2)), each: { item in
            let before = clock.nanoseconds()
            clock.advance(by: .microseconds(costs[item % costs.count]))
            let after = clock.nanoseconds()
            spans.withLock { spans in
                let iteration = loop.iteration
                spans[iteration] = (spans[iteration]?.first ?? before, after)
            }
        }, completion: { _ in })
        try driver.runUntilIdle()
        let durations = spans.withLock { $0.sorted { $0.key < $1.key }.map { $0.value.last - $0.value.first } }
        #expect(durations.count > 50)
        #expect(durations.allSatisfy { $0 <= 2_000_000 })
        #expect(durations.dropLast().allSatisfy { $0 >= 2_000_000 - 250_000 })  // and each fills all but its last eighth
    }

    @Test("budget mode reads the clock once every few items, not once per item")
    func budgetModeReadsTheClockEveryFewItems() throws {
        let clock = CountingClock()
        let loop = try EventLoop(clock: clock)
        var iterations = 0
        var done = false
        try loop.process(0..<4_000, budget: .time(.milliseconds(4)), each: { _ in
            clock.advance(nanoseconds: 10_000)  // 10 µs: 350 items per iteration (3.5 ms of 4)
        }, completion: { _ in done = true })
        let readsBefore = clock.reads
        while !done {
            try loop.runOnce(blocking: false)
            iterations += 1
        }
        let reads = clock.reads - readsBefore
        #expect(iterations == 12)  // 11 full chunks, then 150 items and the completion (1.5 ms: under half the budget)
        #expect(reads <= 4_000 / 10)  // the loop's own reads included
    }

    @Test("budget: the completion runs in the next iteration when the last chunk used more than half the budget")
    func completionWaitsWhenTheLastChunkUsedTheBudget() throws {
        for (cost, sameIteration) in [(Duration.microseconds(10), false), (Duration.nanoseconds(10), true)] {
            let driver = try LoopDriver()
            let clock = driver.clock, loop = driver.loop
            let lastItemIteration = Lock<UInt64>(0)
            let completionIteration = Lock<UInt64>(0)
            try loop.process(0..<700, budget: .time(.milliseconds(4)), each: { _ in  // 10 µs: two full chunks
                clock.advance(by: cost)
                lastItemIteration.withLock { $0 = loop.iteration }
            }, completion: { _ in completionIteration.withLock { $0 = loop.iteration } })
            try driver.runUntilIdle()
            let last = lastItemIteration.withLock { $0 }, completed = completionIteration.withLock { $0 }
            #expect(completed == (sameIteration ? last : last + 1), "cost \(cost)")
        }
    }

    @Test("budget: each chunk leaves room for the rest of the iteration, so the iteration keeps to the budget")
    func chunkLeavesRoomForTheRestOfTheIteration() throws {
        let driver = try LoopDriver()
        let clock = driver.clock, loop = driver.loop
        let busy = Lock(true)
        // Other work in every iteration: 1 ms of (virtual) time, like a progress bar being drawn.
        @Sendable func other() {
            clock.advance(by: .milliseconds(1))
            if busy.withLock({ $0 }) { try? loop.enqueue(other) }
        }
        try loop.enqueue(other)
        let spans = Lock<[UInt64: (first: UInt64, last: UInt64)]>([:])
        try loop.process(0..<20_000, budget: .time(.milliseconds(4)), each: { _ in
            let before = clock.nanoseconds()
            clock.advance(by: .microseconds(10))
            spans.withLock { spans in spans[loop.iteration] = (spans[loop.iteration]?.first ?? before, clock.nanoseconds()) }
        }, completion: { _ in busy.withLock { $0 = false } })
        try driver.runUntilIdle()
        let chunks = spans.withLock { $0.sorted { $0.key < $1.key }.map { $0.value.last - $0.value.first } }
        #expect(chunks.count > 20)
        // From the second chunk on, a chunk takes the budget less the 1 ms of other work and less its last
        // eighth (0.5 ms, the room for a stride's overrun): 2.5 ms, give or take a stride.
        #expect(chunks.dropFirst().dropLast().allSatisfy { $0 >= 2_400_000 && $0 <= 2_500_000 + 500_000 })
        #expect(chunks.dropFirst().allSatisfy { $0 + 1_000_000 <= 4_000_000 })  // the whole iteration
    }

    @Test("budget: a chunk that ran past its deadline (its thread lost the core) makes the next chunks leave room for that, fading")
    func chunkLeavesRoomForALateOvershoot() throws {
        let driver = try LoopDriver()
        let clock = driver.clock, loop = driver.loop
        let spans = Lock<[UInt64: (first: UInt64, last: UInt64, items: [Int])]>([:])
        try loop.process(0..<40_000, budget: .time(.milliseconds(4)), each: { item in
            let before = clock.nanoseconds()
            // Item 3,000 takes 2 ms instead of 10 µs, as when the loop's thread is preempted mid-stride.
            clock.advance(by: item == 3_000 ? .milliseconds(2) : .microseconds(10))
            spans.withLock { spans in
                let span = spans[loop.iteration]
                spans[loop.iteration] = (span?.first ?? before, clock.nanoseconds(), (span?.items ?? []) + [item])
            }
        }, completion: { _ in })
        try driver.runUntilIdle()
        let chunks = spans.withLock { $0.sorted { $0.key < $1.key }.map(\.value) }
        let late = try #require(chunks.firstIndex { $0.items.contains(3_000) })
        let length = { (index: Int) in chunks[index].last - chunks[index].first }
        // Before it, chunks take the budget less one check window (3.5 ms); the late one ran past that.
        #expect((2...late - 1).allSatisfy { length($0) >= 3_400_000 && length($0) <= 3_500_000 })
        #expect(length(late) > 4_000_000)
        let overshoot = length(late) - 3_500_000
        // The next chunk leaves room for the overshoot as well, where a window would have done before …
        #expect(length(late + 1) <= 4_000_000 - overshoot + 20_000)
        // … and the room fades by an eighth an iteration, back to the window.
        #expect(length(late + 2) > length(late + 1))
        #expect(chunks.count > late + 20 && length(late + 20) >= 3_400_000)
    }

    @Test("eachChunk receives consecutive slices between clock reads; per-item mode gives one item each")
    func eachChunkReceivesConsecutiveSlices() throws {
        for budget in [ProcessingBudget.perItem, .time(.milliseconds(4))] {
            let driver = try LoopDriver()
            let clock = driver.clock
            let slices = Lock<[[Int]]>([])
            let outcome = Lock<String>("")
            try driver.loop.process(Array(0..<100), budget: budget, eachChunk: { slice in
                slices.withLock { $0.append(Array(slice)) }
                clock.advance(by: .microseconds(100 * Int64(slice.count)))
            }, completion: { result in outcome.withLock { $0 = "\(result)" } })
            try driver.runUntilIdle()
            let seen = slices.withLock { $0 }
            #expect(seen.flatMap { $0 } == Array(0..<100))
            #expect(outcome.withLock { $0 } == "succeeded")
            if budget.isPerItem {
                #expect(seen.allSatisfy { $0.count == 1 })
            } else {
                #expect(seen.count < 100)
                #expect(seen.map(\.count).max()! <= 5)  // an eighth of 4 ms at 100 µs per item
            }
        }
    }

    @Test("the job's progress advances once per iteration and finishes; it joins the current progress")
    func jobProgressJoinsTheCurrentProgress() throws {
        let driver = try LoopDriver()
        let parent = TaskProgress.discrete(totalUnitCount: 2)
        let clock = driver.clock
        let job = try parent.withCurrent(pendingUnitCount: 1) {
            try driver.loop.process(0..<100, budget: .time(.milliseconds(4)), each: { _ in
                clock.advance(by: .microseconds(100))
            }, completion: { _ in })
        }
        #expect(job.progress.totalUnitCount == 100)
        try driver.step()
        #expect(job.progress.completedUnitCount == 35)  // 3.5 ms of the 4 ms budget at 100 µs an item
        #expect(parent.fractionCompleted == 0.175)
        try driver.runUntilIdle()
        #expect(job.progress.isFinished)
        #expect(parent.fractionCompleted == 0.5)
    }

    @Test("cancelling the job's progress cancels the job")
    func cancellingTheProgressCancelsTheJob() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let job = try recordedJob(0..<5, on: driver, trace: trace)
        try driver.step()
        job.progress.cancel()
        try driver.runUntilIdle()
        #expect(trace.iterations == "U(0) | P(0) | C(cancelled)")
    }

    // MARK: The async form

    @Test("the async form returns when every item is processed, on the loop's thread")
    func asyncFormReturnsWhenDone() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let sum = Atomic<Int>(0)
        let offLoop = Atomic<Int>(0)
        try await loop.process(Array(1...10_000), each: { item in
            sum.add(item, ordering: .relaxed)
            if !loop.isCurrent { offLoop.add(1, ordering: .relaxed) }
        })
        #expect(sum.load(ordering: .relaxed) == 50_005_000)
        #expect(offLoop.load(ordering: .relaxed) == 0)
    }

    @Test("the async form rethrows the error an item threw")
    func asyncFormRethrows() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        await #expect(throws: Failure(item: 5)) {
            try await group.next().process(0..<10, budget: .perItem, each: { item in
                if item == 5 { throw Failure(item: item) }
            })
        }
    }

    @Test("cancelling the awaiting task cancels the job and throws CancellationError")
    func cancellingTheTaskCancelsTheJob() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let processed = Atomic<Int>(0)
        let task = Task {
            try await loop.process(0..<1_000_000_000, budget: .perItem, each: { _ in
                processed.add(1, ordering: .relaxed)
            })
        }
        while processed.load(ordering: .relaxed) < 3 { await Task.yield() }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        let atCancel = processed.load(ordering: .relaxed)
        #expect(atCancel < 1_000_000_000)
        // Nothing runs after the job completed.
        #expect(try await loop.perform { processed.load(ordering: .relaxed) } == atCancel)
    }

    @Test("a task cancelled before the call processes no item and throws CancellationError")
    func alreadyCancelledTaskProcessesNothing() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let processed = Atomic<Int>(0)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await loop.process(0..<10, each: { _ in processed.add(1, ordering: .relaxed) })
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(processed.load(ordering: .relaxed) == 0)
    }
}

/// A virtual clock that counts how often it is read.
final class CountingClock: LoopClock {
    private let now = Atomic<UInt64>(0)
    private let readCount = Atomic<Int>(0)

    func nanoseconds() -> UInt64 {
        readCount.add(1, ordering: .relaxed)
        return now.load(ordering: .relaxed)
    }

    var advancesByItself: Bool { false }
    var reads: Int { readCount.load(ordering: .relaxed) }
    func advance(nanoseconds: UInt64) { now.add(nanoseconds, ordering: .relaxed) }
}

extension OrderTrace {
    /// The labels grouped by iteration, groups separated by " | " (the seed's notation).
    var iterations: String {
        var groups: [[String]] = []
        var current: UInt64?
        for entry in entries {
            if entry.iteration != current {
                groups.append([])
                current = entry.iteration
            }
            groups[groups.count - 1].append(entry.label)
        }
        return groups.map { $0.joined(separator: " ") }.joined(separator: " | ")
    }

    /// Whether each group ran in the iteration right after the previous group's.
    var iterationsAreConsecutive: Bool {
        let distinct = entries.map(\.iteration).reduce(into: [UInt64]()) { if $0.last != $1 { $0.append($1) } }
        return zip(distinct, distinct.dropFirst()).allSatisfy { $1 == $0 + 1 }
    }
}
