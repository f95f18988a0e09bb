extension EventLoop {
    /// Processes every element of `items` on the loop, a chunk per iteration, keeping the loop responsive.
    ///
    /// Items are visited by index (nothing is removed, duplicates are fine). `update(0, count)` runs before the call returns; each later iteration
    /// runs `each` for the next chunk, then `update(done, count)` once; finally `completion` runs exactly
    /// once with the ``ProcessingOutcome``. Every step is queued on the loop's next-iteration queue, so I/O,
    /// timers and other work run between two chunks (R4). `completion` never runs before this returns.
    ///
    /// - With ``ProcessingBudget/perItem`` the order is fixed, one `|` per iteration:
    ///   `U(0) | P(0) | U(1) P(1) | … | U(n-1) P(n-1) | U(n) C`.
    /// - With a time budget (the default, 4 ms) each iteration processes as many items as fit, reading the
    ///   loop's clock once every few items (the stride adapts to the measured cost per item). The budget is
    ///   for the whole iteration: each chunk leaves room for the rest of the iteration as lately measured
    ///   (timers, I/O, other work, progress deliveries, completions of offloaded work; at most three
    ///   quarters of the budget) and for a stride's overrun (an eighth, or the largest overrun lately when
    ///   the loop's thread lost its core mid-stride), and when the last chunk used more
    ///   than half the budget, `completion` runs in the next iteration. For items far cheaper than the
    ///   budget, no iteration runs items for longer than the budget.
    ///
    /// A throwing `each` stops the job: no later item runs, and `completion` receives
    /// ``ProcessingOutcome/failed(_:)`` in the same iteration. Cancel with ``ProcessingJob/cancel()`` from
    /// any thread, or through the job's ``ProcessingJob/progress``.
    ///
    /// ```swift
    /// let job = try loop.process(rows, each: { render($0) },
    ///                            update: { done, total in bar.fraction = Double(done) / Double(total) },
    ///                            completion: { outcome in print(outcome) })
    /// ```
    ///
    /// - Parameters:
    ///   - items: Any random-access collection; it is kept (not copied element by element) until the job ends.
    ///   - budget: Per-item mode or the time each iteration may spend on items.
    ///   - each: Processes one item, on the loop thread.
    ///   - update: Receives `(done, total)` on the loop thread: once before the call returns, then once per
    ///     iteration that processed items.
    ///   - completion: Receives the outcome on the loop thread, exactly once.
    /// - Returns: The job, to cancel it or read its progress.
    /// - Throws: ``EventLoopError/wrongThread(operation:)`` off the loop's thread (use `invoke` or the
    ///   `async` form to get there); ``EventLoopError/shutDown`` once the loop refuses work. When it throws,
    ///   none of the closures is ever called.
    ///
    /// Call on the loop thread.
    @inlinable
    @discardableResult
    public func process<Items: RandomAccessCollection>(
        _ items: Items,
        budget: ProcessingBudget = .default,
        each: @escaping (Items.Element) throws -> Void,
        update: @escaping (_ done: Int, _ total: Int) -> Void = { _, _ in },
        completion: @escaping (ProcessingOutcome) -> Void
    ) throws(EventLoopError) -> ProcessingJob {
        guard isCurrent else { throw .wrongThread(operation: "process(_:budget:each:update:completion:)") }
        let job = ProcessingJob(count: items.count)
        try startProcessing(job, count: items.count, budget: budget, runItems: Self.itemRunner(items, each),
                            update: update, completion: completion)
        return job
    }

    /// Processes `items` on the loop in consecutive slices: the form for items so cheap that the call per
    /// item would dominate.
    ///
    /// Everything is as in ``process(_:budget:each:update:completion:)`` (order, budget, updates,
    /// cancellation, outcome), except that `eachChunk` receives the items between two clock reads as one
    /// slice, so the compiler can optimise the caller's own loop over it. In per-item mode each slice holds
    /// one item. A throwing `eachChunk` fails the job; the items of its slice count as not done.
    ///
    /// ```swift
    /// try loop.process(samples, eachChunk: { slice in for s in slice { histogram[s] += 1 } },
    ///                  completion: { _ in draw(histogram) })
    /// ```
    ///
    /// - Parameters:
    ///   - items: Any random-access collection.
    ///   - budget: Per-item mode or the time each iteration may spend on items.
    ///   - eachChunk: Processes a slice of consecutive items, on the loop thread.
    ///   - update: Receives `(done, total)` on the loop thread, as in the per-item form.
    ///   - completion: Receives the outcome on the loop thread, exactly once.
    /// - Returns: The job, to cancel it or read its progress.
    /// - Throws: As ``process(_:budget:each:update:completion:)``.
    ///
    /// Call on the loop thread.
    @inlinable
    @discardableResult
    public func process<Items: RandomAccessCollection>(
        _ items: Items,
        budget: ProcessingBudget = .default,
        eachChunk: @escaping (Items.SubSequence) throws -> Void,
        update: @escaping (_ done: Int, _ total: Int) -> Void = { _, _ in },
        completion: @escaping (ProcessingOutcome) -> Void
    ) throws(EventLoopError) -> ProcessingJob {
        guard isCurrent else { throw .wrongThread(operation: "process(_:budget:eachChunk:update:completion:)") }
        let job = ProcessingJob(count: items.count)
        let runItems: (inout Int, Int) throws -> Void = { next, end in
            let lower = items.index(items.startIndex, offsetBy: next)
            let upper = items.index(lower, offsetBy: end - next)
            try eachChunk(items[lower..<upper])
            next = end
        }
        try startProcessing(job, count: items.count, budget: budget, runItems: runItems,
                            update: update, completion: completion)
        return job
    }

    /// Processes every element of `items` on the loop and returns when all are done.
    ///
    /// The `async` form of ``process(_:budget:each:update:completion:)``. Called from the loop's thread
    /// (an actor on the loop, a task preferring it), the job starts at once and `update(0, count)` runs
    /// before the first suspension; from anywhere else it starts in the loop's next drain. Cancelling
    /// the awaiting task cancels the job.
    ///
    /// - Parameters:
    ///   - items: Any sendable random-access collection.
    ///   - budget: Per-item mode or the time each iteration may spend on items.
    ///   - each: Processes one item, on the loop thread.
    ///   - update: Receives `(done, total)` on the loop thread, as in the callback form.
    /// - Throws: `CancellationError` when the job was cancelled (by the task, or by cancelling the
    ///   current ``TaskProgress`` it joined); the error `each` threw; ``EventLoopError/shutDown`` when the
    ///   loop refuses work; ``EventLoopError/cancelled`` when it shut down before the job started.
    ///
    /// Safe from any thread or task.
    @inlinable
    public func process<Items: RandomAccessCollection & Sendable>(
        _ items: Items,
        budget: ProcessingBudget = .default,
        each: @escaping @Sendable (Items.Element) throws -> Void,
        update: @escaping @Sendable (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) async throws {
        let job = ProcessingJob(count: items.count)
        try await runProcessing(job, count: items.count, budget: budget,
                                runItems: Self.sendableItemRunner(items, each), update: update)
    }

    /// Turns a collection and a per-element closure into "process items `next..<end` by offset".
    @inlinable
    static func itemRunner<Items: RandomAccessCollection>(
        _ items: Items, _ each: @escaping (Items.Element) throws -> Void
    ) -> (inout Int, Int) throws -> Void {
        let start = items.startIndex
        return { next, end in
            var index = items.index(start, offsetBy: next)
            while next < end {
                try each(items[index])
                items.formIndex(after: &index)
                next &+= 1
            }
        }
    }

    /// ``itemRunner(_:_:)`` for sendable items and closures.
    @inlinable
    static func sendableItemRunner<Items: RandomAccessCollection & Sendable>(
        _ items: Items, _ each: @escaping @Sendable (Items.Element) throws -> Void
    ) -> @Sendable (inout Int, Int) throws -> Void {
        { next, end in
            var index = items.index(items.startIndex, offsetBy: next)
            while next < end {
                try each(items[index])
                items.formIndex(after: &index)
                next &+= 1
            }
        }
    }

    /// Starts a job on the loop thread: queues its first step, then reports `update(0, count)`.
    @usableFromInline
    func startProcessing(
        _ job: ProcessingJob, count: Int, budget: ProcessingBudget,
        runItems: @escaping (inout Int, Int) throws -> Void,
        update: @escaping (Int, Int) -> Void,
        completion: @escaping (ProcessingOutcome) -> Void
    ) throws(EventLoopError) {
        let run = ProcessingRun(loop: self, job: job, total: count, budget: budget.nanoseconds,
                                runItems: runItems, update: update, completion: completion)
        let box = LoopConfined(run, owner: owner)
        // Queue first: when the loop refuses, no closure has been called (the C ABI's rule).
        try append(Job { box.value.step(box) })
        run.report()
    }

    /// The `async` form's body: starts the job on the loop and waits for its outcome.
    @usableFromInline
    func runProcessing(
        _ job: ProcessingJob, count: Int, budget: ProcessingBudget,
        runItems: @escaping @Sendable (inout Int, Int) throws -> Void,
        update: @escaping @Sendable (Int, Int) -> Void
    ) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let start: @Sendable () -> Void = { [self] in
                    do {
                        try startProcessing(job, count: count, budget: budget, runItems: runItems,
                                            update: update) { outcome in
                            switch outcome {
                            case .succeeded: continuation.resume()
                            case .cancelled: continuation.resume(throwing: CancellationError())
                            case .failed(let error): continuation.resume(throwing: error)
                            }
                        }
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                if isCurrent {
                    start()
                } else {
                    do {
                        try appendCancellable(start, onCancel: { continuation.resume(throwing: EventLoopError.cancelled) })
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        } onCancel: {
            job.cancel()
        }
    }
}
