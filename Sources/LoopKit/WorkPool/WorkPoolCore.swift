import Dispatch
import Synchronization

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
        var queue = FIFOQueue<WorkItem>()
        var counters = Counters()
        /// Threads blocked in ``waitUntilIdle()``.
        var idleWaiters: [DispatchSemaphore] = []
        /// Pool threads asleep on ``wakeUp`` that no submit has signalled yet.
        var sleepers = 0

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
    /// A lock that never sleeps in the kernel: the loops that submit and the threads that take hold it
    /// for a few instructions each, and a priority-inheritance `Mutex` made a busy loop sleep behind a
    /// pool thread waiting for a core (``YieldingLock``).
    private let state = YieldingLock(State())
    /// What sleeping threads wait on: signalled by a submit that finds a sleeper and no spinning thread,
    /// by a thread that takes an item and leaves more queued, and once per sleeper at shutdown. A thread
    /// that is spinning is not woken: it sees the item by itself.
    private let wakeUp = DispatchSemaphore(value: 0)
    /// The items queued, mirrored out of the lock for spinning threads to watch.
    private let pending = Atomic<Int>(0)
    /// Whether a thread is spinning: at most one spins at a time, so a pool never spins more than one
    /// core against the loops that feed it.
    private let spinning = Atomic<Bool>(false)

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
        enum Outcome { case queued, queuedForASleeper, cancelledFirst }
        let outcome = try state.withLock { (state) throws(WorkPoolError) -> Outcome in
            guard !state.counters.isShutDown else { throw .shutDown }
            guard state.counters.queued < queueLimit else { throw .queueFull(limit: queueLimit) }
            guard item.markQueued() else { return .cancelledFirst }
            state.queue.append(item)
            state.counters.queued += 1
            pending.add(1, ordering: .releasing)
            // A spinning thread sees the item by itself, and if it finds more queued when it takes one,
            // it wakes a sleeper then (below): the submitter, often a busy loop, makes no wake-up call.
            guard state.sleepers > 0, !spinning.load(ordering: .relaxed) else { return .queued }
            state.sleepers -= 1
            return .queuedForASleeper
        }
        switch outcome {
        case .queued: break
        case .queuedForASleeper: wakeUp.signal()
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
        let ended = state.withLock { state -> ([WorkItem], sleepers: Int)? in
            guard !state.counters.isShutDown else { return nil }
            state.counters.isShutDown = true
            var cancelled: [WorkItem] = []
            for item in state.queue.removeAll() where item.markCancelled() == .queued {
                state.counters.queued -= 1
                cancelled.append(item)
            }
            pending.store(0, ordering: .relaxed)
            defer { state.sleepers = 0 }
            return (cancelled, state.sleepers)
        }
        guard let (cancelled, sleepers) = ended else { return }
        for item in cancelled { item.reportCancelled(WorkPoolError.cancelled) }
        for _ in 0..<sleepers { wakeUp.signal() }
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
    ///
    /// A thread with nothing to do first spins briefly, watching the queue, when it is in a conversation
    /// with a loop (its last wait was ended by a submit within ``WakeSpin/limitNanoseconds``, or its last
    /// spin saw one), as a loop does for its inbox (``WakeSpin``): an offload that answers a completion
    /// then reaches a running thread, and its submit skips the wake-up. Otherwise it sleeps until a
    /// submit signals it.
    private func workerLoop() {
        enum Next { case run(WorkItem, wakeASleeper: Bool), idle([DispatchSemaphore]), exit([DispatchSemaphore]) }
        var wakeSpin = WakeSpin()
        // Whether this thread has just run an item: counted as ended in the same critical section that
        // takes the next, so that a thread enters the lock once per item, not twice.
        var ranOne = false
        while true {
            let next = state.withLock { state -> Next in
                if ranOne {
                    state.counters.active -= 1
                    state.counters.completed += 1
                }
                while let item = state.queue.popFirst() {
                    pending.subtract(1, ordering: .relaxed)
                    guard item.markRunning() else { continue }  // cancelled while queued
                    state.counters.queued -= 1
                    state.counters.active += 1
                    // More waiting than this thread takes, and a submit may have left a sleeper asleep
                    // for a spinner: wake one, so that queued work still runs in parallel.
                    let wake = state.counters.queued > 0 && state.sleepers > 0 && !spinning.load(ordering: .relaxed)
                    if wake { state.sleepers -= 1 }
                    return .run(item, wakeASleeper: wake)
                }
                let waiters = state.takeIdleWaitersIfIdle()
                return state.counters.isShutDown ? .exit(waiters) : .idle(waiters)
            }
            ranOne = false
            switch next {
            case .run(let item, let wakeASleeper):
                if wakeASleeper { wakeUp.signal() }
                item.run()
                ranOne = true
            case .idle(let waiters):
                for waiter in waiters { waiter.signal() }
                if wakeSpin.shouldSpin() {
                    if spinForWork() {
                        wakeSpin.spinSawJob()
                        continue
                    }
                    wakeSpin.spinSawNothing()
                }
                let mustSleep = state.withLock { state -> Bool in
                    guard state.queue.count == 0, !state.counters.isShutDown else { return false }
                    state.sleepers += 1
                    return true
                }
                guard mustSleep else { continue }
                let start = MonotonicTime.nanoseconds()
                wakeUp.wait()
                wakeSpin.waitEnded(afterNanoseconds: MonotonicTime.nanoseconds() &- start, byAnotherThreadsJob: true)
            case .exit(let waiters):
                for waiter in waiters { waiter.signal() }
                return
            }
        }
    }

    /// Watches the queue for up to ``WakeSpin/limitNanoseconds``, unless another thread is spinning
    /// already. Returns whether an item arrived.
    private func spinForWork() -> Bool {
        guard !spinning.exchange(true, ordering: .acquiring) else { return false }
        defer { spinning.store(false, ordering: .releasing) }
        let deadline = MonotonicTime.nanoseconds() &+ WakeSpin.limitNanoseconds
        var rounds = 0
        while pending.load(ordering: .acquiring) == 0 {
            rounds &+= 1
            if rounds & 63 == 0 {
                if MonotonicTime.nanoseconds() >= deadline { return false }
                ThisThread.yieldCore()  // a loop that shares this core gets it now
            }
        }
        return true
    }
}
