/// A bounded pool of threads for work that would block a loop: CPU-heavy computations, file-system
/// calls, anything that may take longer than an iteration's budget.
///
/// A pool has a fixed number of threads and a queue of at most ``queueLimit`` items that wait for one;
/// work beyond that is refused with ``WorkPoolError/queueFull(limit:)``, never queued without bound.
/// Work starts in the order it was queued. Work cancelled before it starts never runs, and its waiter
/// hears so; work that has started runs to its end.
///
/// Loops hand work to a pool with ``EventLoop/offload(to:_:)`` (async) and
/// ``EventLoop/offload(to:_:completion:)`` (a callback run on the loop); the results come back to the
/// loop by its next-iteration queue, in the drain of phase 3 (rule R13 of the ordering contract).
///
/// ```swift
/// let digest = try await loop.offload { sha256(bigBuffer) }   // on WorkPool.shared
/// ```
///
/// ``shared`` is sized from the machine's CPU count and lives as long as the process. A pool you create
/// runs its threads until ``shutdown()`` or until its last reference goes away.
///
/// Safe from any thread. The corresponding libuv call is `uv_queue_work`; SwiftNIO's is `NIOThreadPool`.
public final class WorkPool: Sendable {
    /// The pool that ``EventLoop/offload(to:_:)`` uses by default: one thread per CPU (at least two),
    /// a queue of up to 1,048,576 waiting items, named "LoopKit pool". It is never shut down.
    ///
    /// Safe from any thread. Created, with its threads, on first use.
    public static let shared: WorkPool = {
        do {
            return try WorkPool(threads: max(2, WorkPool.processorCount), queueLimit: 1 << 20, name: "LoopKit pool")
        } catch {
            fatalError("LoopKit: the shared work pool could not start its threads: \(error)")
        }
    }()

    /// The number of CPUs online (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1. Safe from any thread.
    public static var processorCount: Int { Machine.processorsOnline }

    /// The pool's threads and queue; the threads hold it, the pool shuts it down when it goes away.
    let core: WorkPoolCore

    /// The number of threads that run work. Safe from any thread.
    public var threadCount: Int { core.threadCount }

    /// The most items that may wait for a thread; more are refused with ``WorkPoolError/queueFull(limit:)``.
    /// Safe from any thread.
    public var queueLimit: Int { core.queueLimit }

    /// The pool's name; its threads carry it (as `top -H` shows). Safe from any thread.
    public var name: String { core.name }

    /// Creates a pool and starts its threads.
    ///
    /// - Parameters:
    ///   - threads: How many threads run work; at least 1.
    ///   - queueLimit: How many items may wait for a thread; at least 1.
    ///   - name: The threads' name (the kernel keeps its first 15 bytes).
    /// - Throws: ``WorkPoolError/threadStartFailed(errno:)`` when the system refuses a thread (the
    ///   threads already started end).
    ///
    /// Safe from any thread. `threads` or `queueLimit` below 1 is a programmer error and stops the process.
    public init(threads: Int, queueLimit: Int = 65_536, name: String = "LoopKit pool") throws(WorkPoolError) {
        precondition(threads >= 1, "WorkPool: threads must be at least 1, got \(threads)")
        precondition(queueLimit >= 1, "WorkPool: queueLimit must be at least 1, got \(queueLimit)")
        core = WorkPoolCore(threadCount: threads, queueLimit: queueLimit, name: name)
        try core.startThreads()
    }

    deinit {
        core.shutdown()
    }

    // MARK: Observing

    /// Items waiting for a thread now (not counting cancelled ones). Safe from any thread; a snapshot.
    public var queuedCount: Int { core.snapshot.queued }

    /// Items running on the pool's threads now. Safe from any thread; a snapshot.
    public var activeCount: Int { core.snapshot.active }

    /// Items that have run to their end since the pool started. Safe from any thread; a snapshot.
    public var completedCount: UInt64 { core.snapshot.completed }

    /// Whether ``shutdown()`` has been called. Safe from any thread.
    public var isShutDown: Bool { core.snapshot.isShutDown }

    // MARK: Running work

    /// Runs `work` on one of the pool's threads and returns its result to the awaiting task.
    ///
    /// The task resumes on its own executor. A task cancelled before a thread takes the work gets
    /// `CancellationError` and the work never runs; once the work has started, it runs to its end and
    /// the task gets its result.
    ///
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw; `CancellationError` when the task was cancelled before the work
    ///   started; ``WorkPoolError/queueFull(limit:)`` or ``WorkPoolError/shutDown`` when the pool
    ///   refused it; ``WorkPoolError/cancelled`` when the pool shut down before it started.
    ///
    /// Safe from any thread or task.
    public func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        let cancellation = CancellationRelay()
        #if LOOPKIT_TSAN
        // Swift's runtime does not tell the thread sanitizer that a continuation resumed on a pool thread
        // happens before the awaiting task goes on: say so, or every value the work made is reported.
        let handOver = SanitizerKey()
        defer { handOver.acquired() }
        #endif
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                #if LOOPKIT_TSAN
                let item = WorkItem(ResumingBody(work, continuation: continuation, handOver: handOver))
                #else
                let item = WorkItem(ResumingBody(work, continuation: continuation))
                #endif
                cancellation.attach(item, to: core)
                do {
                    try core.submit(item)
                } catch {
                    item.reportCancelled(error)
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// Shuts the pool down: new work is refused with ``WorkPoolError/shutDown``; work still waiting for
    /// a thread is cancelled, each waiter told ``WorkPoolError/cancelled`` once, in queue order; work that
    /// has started runs to its end. The threads end once they are idle. Calling it again does nothing.
    ///
    /// Returns without waiting for running work; ``waitUntilIdle()`` waits for it.
    ///
    /// Safe from any thread, also from the pool's own threads.
    public func shutdown() {
        core.shutdown()
    }

    /// Blocks the calling thread until no work is waiting or running and every result has been handed
    /// over (an async waiter resumed, a completion queued on its loop).
    ///
    /// For tests, and for a host that must know the pool has gone quiet before it tears things down.
    ///
    /// Safe from any thread but the pool's own (there it would wait for itself).
    public func waitUntilIdle() {
        core.waitUntilIdle()
    }
}

/// Carries a task's cancellation to the work item it queued, whichever of the two comes first.
///
/// `withTaskCancellationHandler` may run its handler before the operation has made the item (a task
/// cancelled already) or while it does; the relay remembers a cancellation that came first.
final class CancellationRelay: Sendable {
    private enum State {
        case waiting
        case attached(WorkItem, WorkPoolCore)
        case cancelled
    }

    private let state = Lock<State>(.waiting)

    /// Binds the relay to its item, cancelling the item at once when the task was cancelled first.
    func attach(_ item: WorkItem, to core: WorkPoolCore) {
        let cancelledFirst = state.withLock { state -> Bool in
            if case .cancelled = state { return true }
            state = .attached(item, core)
            return false
        }
        if cancelledFirst { _ = item.markCancelled() }  // still `created`: the submit will report it
    }

    /// The task was cancelled: cancels the item if it has not started.
    func cancel() {
        let attached = state.withLock { state -> (WorkItem, WorkPoolCore)? in
            defer { state = .cancelled }
            if case .attached(let item, let core) = state { return (item, core) }
            return nil
        }
        if let (item, core) = attached { core.cancel(item, reason: CancellationError()) }
    }
}

/// The body of ``WorkPool/run(_:)``'s item: runs the work and resumes the awaiting task with its outcome,
/// or with the reason it never ran. One object, where two closures needed two contexts.
final class ResumingBody<Value: Sendable>: WorkBody {
    private let work: @Sendable () throws -> Value
    private let continuation: CheckedContinuation<Value, any Error>
    #if LOOPKIT_TSAN
    private let handOver: SanitizerKey

    init(_ work: @escaping @Sendable () throws -> Value, continuation: CheckedContinuation<Value, any Error>,
         handOver: SanitizerKey) {
        self.work = work
        self.continuation = continuation
        self.handOver = handOver
    }
    #else
    init(_ work: @escaping @Sendable () throws -> Value, continuation: CheckedContinuation<Value, any Error>) {
        self.work = work
        self.continuation = continuation
    }
    #endif

    func perform() {
        let result = Result { try work() }
        #if LOOPKIT_TSAN
        handOver.releasing()
        #endif
        continuation.resume(with: result)
    }

    func cancelled(_ reason: any Error) { continuation.resume(throwing: reason) }
}

extension WorkPool {
    /// Queues `work` for a pool thread with no loop involved: `onCancel` runs instead (on the cancelling
    /// thread) if it is cancelled, or the pool shuts down, before it starts. For LoopKit's own layers
    /// (file reads ahead of their reader), which hand results over themselves.
    ///
    /// - Throws: ``WorkPoolError/queueFull(limit:)`` or ``WorkPoolError/shutDown``; nothing is kept.
    ///
    /// Safe from any thread.
    package func submit(
        _ work: @escaping @Sendable () -> Void, onCancel: @escaping @Sendable (any Error) -> Void
    ) throws(WorkPoolError) -> OffloadedWork {
        let item = WorkItem(run: work, cancel: onCancel)
        try core.submit(item)
        return OffloadedWork(item: item, core: core)
    }
}
