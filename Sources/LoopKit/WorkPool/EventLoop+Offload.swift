import Synchronization
extension EventLoop {
    /// Runs `work` on a work pool, off the loop, and returns its result to the awaiting task.
    ///
    /// The task resumes on its own executor when the work has ended: a task that runs on this loop (one
    /// that prefers it, or an actor pinned to it) is queued on the loop's next-iteration queue from the
    /// pool thread and goes on in the loop's next drain (phase 3; rule R13), never inside a callback (when
    /// the work ended before the task had suspended, it goes on at once, in the drain it runs in).
    /// A task cancelled before a pool thread takes the work gets `CancellationError` and the work never
    /// runs; once started, the work runs to its end and the task gets its result.
    ///
    /// ```swift
    /// let thumbnail = try await loop.offload { try render(image) }
    /// ```
    ///
    /// - Parameters:
    ///   - pool: Where the work runs; ``WorkPool/shared`` by default.
    ///   - work: What to run, on a pool thread. It must not touch loop-bound state.
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw; `CancellationError`; ``EventLoopError/shutDown`` when the loop has
    ///   shut down; ``WorkPoolError/queueFull(limit:)``, ``WorkPoolError/shutDown`` or
    ///   ``WorkPoolError/cancelled`` from the pool.
    ///
    /// Safe from any thread or task.
    public func offload<Value: Sendable>(
        to pool: WorkPool = .shared, _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        guard queue.isAccepting else { throw EventLoopError.shutDown }
        return try await pool.run(work)
    }

    /// Runs `work` on a work pool, off the loop, then `completion` with its result on the loop.
    ///
    /// When the work ends, the pool thread queues `completion` on the loop's next-iteration queue, so it
    /// runs in the loop's next drain (phase 3), after the work ended and never inside this call, even
    /// when the work is instant (rule R13). Completions of work that ended in one order run in that order
    /// (R1). `completion` runs exactly once:
    /// - with what `work` returned or threw;
    /// - with `CancellationError` when ``OffloadedWork/cancel()`` cancelled it before it started;
    /// - with ``WorkPoolError/cancelled`` when the pool shut down before it started;
    /// - with ``EventLoopError/cancelled`` when this loop shuts down before the work ended (a pool
    ///   thread that took it finishes it; its result is dropped). Then it runs in the loop's shutdown,
    ///   after the work queued before it.
    ///
    /// - Parameters:
    ///   - pool: Where the work runs; ``WorkPool/shared`` by default.
    ///   - work: What to run, on a pool thread. It must not touch loop-bound state.
    ///   - completion: Runs on the loop's thread with the outcome.
    /// - Returns: A handle to cancel the work.
    /// - Throws: ``EventLoopError/wrongThread(operation:)`` off the loop's thread;
    ///   ``EventLoopError/shutDown`` once the loop has begun to shut down; ``WorkPoolError/queueFull(limit:)``
    ///   or ``WorkPoolError/shutDown`` when the pool refuses the work. `completion` is never called then.
    ///
    /// Call on the loop's thread. The corresponding libuv call is `uv_queue_work`.
    @discardableResult
    public func offload<Value: Sendable>(
        to pool: WorkPool = .shared,
        _ work: @escaping @Sendable () throws -> Value,
        completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) throws -> OffloadedWork {
        guard isCurrent else { throw EventLoopError.wrongThread(operation: "offload(to:_:completion:)") }
        let core = pool.core
        let delivery = OffloadDelivery(loop: self, work: work, completion: completion)
        let item = WorkItem(delivery)
        // Registered first, so a shutdown that another thread begins meanwhile is seen here, not missed.
        // The observer captures the delivery alone, which is then the closure's context (no allocation).
        let registered = addShutdownObserver(ObjectIdentifier(delivery)) { delivery.loopShutDown() }
        guard registered else { throw EventLoopError.shutDown }
        do {
            try core.submit(item)
        } catch {
            removeShutdownObserver(ObjectIdentifier(delivery))
            throw error
        }
        // Only once the pool has the item: the delivery and the item then hold each other until a pool thread
        // or a cancellation takes the item's body, which every queued item's end does. A refused item is
        // never taken, and would keep the pair (and this loop) alive. The observer runs on this thread, so
        // not before this line.
        delivery.submitting(item, to: core)
        return OffloadedWork(item: item, core: core)
    }
}

/// One offload's body on the pool and its hand-over to the completion on the loop, exactly once: the
/// first of the delivery (queued from the pool thread) and the loop's shutdown observer wins.
///
/// One object for what were three closures and a delivery: the pool runs it (``WorkBody``), and the
/// loop's shutdown observer calls it.
final class OffloadDelivery<Value: Sendable>: WorkBody {
    private let loop: EventLoop
    private let work: @Sendable () throws -> Value
    /// Called once, on the loop's thread, by the first of the delivery and the shutdown observer to run
    /// (``isCompleted`` says which). Not behind a lock: a lock's payload would be a type generic over
    /// `Value`, whose metadata Swift would look up at run time on every offload.
    private let completion: @Sendable (Result<Value, any Error>) -> Void
    private let isCompleted = Atomic<Bool>(false)
    /// The item and its pool, for a loop shutdown to cancel it (set once the pool has accepted the item).
    private let submission = Lock<(item: WorkItem, core: WorkPoolCore)?>(nil)

    init(loop: EventLoop, work: @escaping @Sendable () throws -> Value,
         completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        self.loop = loop
        self.work = work
        self.completion = completion
    }

    /// Remembers the item that carries this body and its pool, once the pool has accepted it.
    func submitting(_ item: WorkItem, to core: WorkPoolCore) {
        submission.withLock { $0 = (item, core) }
    }

    /// On a pool thread: runs the work and delivers what it returned or threw.
    func perform() { deliver(Result { try work() }) }

    /// The work never ran: delivers why.
    func cancelled(_ reason: any Error) { deliver(.failure(reason)) }

    /// On the loop, as it shuts down: cancels the item if no thread has taken it, and completes now.
    func loopShutDown() {
        if let (item, core) = submission.withLock({ $0 }) { core.cancel(item, reason: EventLoopError.cancelled) }
        complete(with: .failure(EventLoopError.cancelled))
    }

    /// From a pool thread (or a cancelling thread): queues the completion on the loop (R13). Taken until
    /// the loop's final drain is over, so a loop that is shutting down still gets it; once the loop has
    /// finished, its shutdown observer has already completed this delivery.
    func deliver(_ result: Result<Value, any Error>) {
        do {
            try loop.enqueueCleanup { [self] in
                loop.removeShutdownObserver(ObjectIdentifier(self))
                complete(with: result)
            }
        } catch {
            // The loop has finished shutting down: its observer ran `complete` already.
        }
    }

    /// On the loop: runs the completion if it has not run.
    func complete(with result: Result<Value, any Error>) {
        guard !isCompleted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        completion(result)
    }
}
