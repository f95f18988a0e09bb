import Dispatch

/// A pool's threads, queue and counters. The threads hold it; its ``WorkPool`` shuts it down when it
/// goes away, so a pool nobody references does not keep threads forever.
final class WorkPoolCore: Sendable {
    struct Counters {
        var queued = 0
        var active = 0
        var completed: UInt64 = 0
        var isShutDown = false
    }

    private struct State {
        var queue = WorkQueue()
        var counters = Counters()
        /// Threads blocked in ``waitUntilIdle()``.
        var idleWaiters: [DispatchSemaphore] = []

        var isIdle: Bool { counters.queued == 0 && counters.active == 0 }

        /// The idle waiters to wake, when the pool is idle.
        mutating func takeIdleWaitersIfIdle() -> [DispatchSemaphore] {
            guard isIdle, !idleWaiters.isEmpty else { return [] }
            defer { idleWaiters = [] }
            return idleWaiters
        }
    }

    let threadCount: Int
    let queueLimit: Int
    let name: String
    private let state = Lock(State())
    /// Signalled once per queued item and once per thread at shutdown; the threads wait on it.
    private let wakeUp = DispatchSemaphore(value: 0)

    init(threadCount: Int, queueLimit: Int, name: String) {
        self.threadCount = threadCount
        self.queueLimit = queueLimit
        self.name = name
    }

    var snapshot: Counters { state.withLock { $0.counters } }

    func startThreads() throws(WorkPoolError) {
        for _ in 0..<threadCount {
            do {
                let thread = try SpawnedThread(name: name) { [self] in workerLoop() }
                thread.detach()
            } catch {
                shutdown()
                if case .system(_, let code) = error { throw .threadStartFailed(errno: code) }
                throw .threadStartFailed(errno: 0)
            }
        }
    }

    /// Queues `item` for a thread.
    ///
    /// An item cancelled before it was queued is reported cancelled (not an error: its waiter hears it
    /// from the item). Throws, keeping nothing, when the pool is full or shut down.
    func submit(_ item: WorkItem) throws(WorkPoolError) {
        enum Outcome { case queued, cancelledFirst }
        let outcome = try state.withLock { (state) throws(WorkPoolError) -> Outcome in
            guard !state.counters.isShutDown else { throw .shutDown }
            guard state.counters.queued < queueLimit else { throw .queueFull(limit: queueLimit) }
            guard item.markQueued() else { return .cancelledFirst }
            state.queue.append(item)
            state.counters.queued += 1
            return .queued
        }
        switch outcome {
        case .queued: wakeUp.signal()
        case .cancelledFirst: item.reportCancelled(CancellationError())
        }
    }

    /// Cancels `item` if it has not started; its waiter hears `reason`, once.
    ///
    /// - Returns: Whether the item was cancelled by this call (false: it had started, ended, or was
    ///   cancelled already).
    @discardableResult
    func cancel(_ item: WorkItem, reason: any Error) -> Bool {
        switch item.markCancelled() {
        case .queued?:
            state.withLock { $0.counters.queued -= 1 }
            item.reportCancelled(reason)
            wakeIdleWaiters()
            return true
        case .created?:
            return true  // the submit that follows reports it
        default:
            return false
        }
    }

    func shutdown() {
        let cancelled = state.withLock { state -> [WorkItem]? in
            guard !state.counters.isShutDown else { return nil }
            state.counters.isShutDown = true
            var cancelled: [WorkItem] = []
            for item in state.queue.removeAll() where item.markCancelled() == .queued {
                state.counters.queued -= 1
                cancelled.append(item)
            }
            return cancelled
        }
        guard let cancelled else { return }
        for item in cancelled { item.reportCancelled(WorkPoolError.cancelled) }
        for _ in 0..<threadCount { wakeUp.signal() }
        wakeIdleWaiters()
    }

    func waitUntilIdle() {
        let waiter = DispatchSemaphore(value: 0)
        let mustWait = state.withLock { state -> Bool in
            guard !state.isIdle else { return false }
            state.idleWaiters.append(waiter)
            return true
        }
        if mustWait { waiter.wait() }
    }

    private func wakeIdleWaiters() {
        for waiter in state.withLock({ $0.takeIdleWaitersIfIdle() }) { waiter.signal() }
    }

    /// A pool thread: takes items in queue order and runs them, until the pool shuts down.
    private func workerLoop() {
        enum Next { case run(WorkItem), wait, exit }
        while true {
            wakeUp.wait()
            let next = state.withLock { state -> Next in
                while let item = state.queue.popFirst() {
                    guard item.markRunning() else { continue }  // cancelled while queued
                    state.counters.queued -= 1
                    state.counters.active += 1
                    return .run(item)
                }
                return state.counters.isShutDown ? .exit : .wait
            }
            switch next {
            case .run(let item):
                item.run()
                let waiters = state.withLock { state -> [DispatchSemaphore] in
                    state.counters.active -= 1
                    state.counters.completed += 1
                    return state.takeIdleWaitersIfIdle()
                }
                for waiter in waiters { waiter.signal() }
            case .wait:
                continue
            case .exit:
                return
            }
        }
    }
}
