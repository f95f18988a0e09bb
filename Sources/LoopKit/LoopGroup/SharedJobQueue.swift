import Synchronization

/// Swift concurrency jobs that any loop of a group may run: what a group presented to Swift as its default
/// executor (`LoopKitExecutors.install(defaultExecutor:)`) queues the tasks with no executor of their own on.
///
/// One queue for the whole group, rather than a job per loop round robin: a loop that is busy leaves the
/// jobs to the others, and a loop that is free takes them, so a task group's children spread over the loops
/// as fast as the loops take them, and a child that a busy loop's task spawns does not wait behind that
/// task when another loop is idle. Round robin sent every other job across threads, with a wake-up each
/// time the other loop slept, and queued jobs behind a loop's long work while its neighbour had none.
///
/// The loops take jobs with a drain job of their own, queued on the loop like any other work (so the loop's
/// phases and its I/O keep their order, R9):
/// - a push from one of the group's loops asks that loop to drain, and when other jobs are waiting too, one
///   other loop that is not draining already (so a burst of jobs wakes a second loop once, not once per job).
///   A lone job is left to the loop that queued it (or to a loop already draining), which takes it after
///   the work it was queued from, as Tokio keeps a worker's last spawned task in its LIFO slot: a task
///   hopping between awaits costs no wake-up of another thread. A loop whose callback blocks holds that
///   one job back;
/// - a push from any other thread asks a loop that is not draining, preferring one that is awake (running,
///   or spinning after a quick answer from another thread, ``WakeSpin``) to one waiting in its poll, round
///   robin among equals: a task hopping to the main actor and back comes back to a loop still spinning for
///   it rather than waking the other;
/// - a drain runs up to ``drainBudget`` jobs, then queues itself again for the loop's next iteration when
///   jobs are left, so a flood of jobs never keeps a loop's I/O waiting for more than one budget (R4).
///
/// These jobs are not the loop's queued work: a drain takes them as they come, those pushed while it runs
/// included, so R2 and R3 (work queued during a drain runs in the next iteration) do not hold for them (Swift's
/// own executor promises no such order either). Everything queued on the loop itself keeps them.
///
/// A loop that has shut down takes no more drains; when no loop of the group takes work any more, the jobs
/// go to Swift's global concurrent executor, so no task is ever left unrun.
///
/// Safe from any thread.
package final class SharedJobQueue: Sendable {
    /// Jobs one drain runs before it lets the loop poll again.
    package static let drainBudget = 64

    /// One loop of the group and whether a drain is queued on it.
    private final class Drainer: Sendable {
        let loop: EventLoop
        /// A drain is queued on the loop or running: it takes every job pushed before it finds the queue empty.
        let isScheduled = Atomic<Bool>(false)
        /// The loop refused the drain: it has shut down.
        let isGone = Atomic<Bool>(false)

        init(_ loop: EventLoop) { self.loop = loop }
    }

    private let jobs = YieldingLock(FIFOQueue<UnownedJob>())
    private let drainers: [Drainer]
    /// Where a push from outside the group starts looking for a loop: an index into `drainers`.
    private let cursor = Atomic<Int>(0)

    /// A queue drained by `loops`, in place of queueing on each of them (with none, every job goes to Swift's
    /// global concurrent executor).
    package init(loops: [EventLoop]) {
        drainers = loops.map(Drainer.init)
    }

    /// Queues `job`, to run on one of the loops with `taskExecutor` as its task executor.
    ///
    /// Never refused: when every loop has shut down, the job goes on on Swift's global concurrent executor.
    /// Safe from any thread.
    package func push(_ job: UnownedJob, runningOn taskExecutor: UnownedTaskExecutor) {
        let waiting = jobs.withLock { queue in
            queue.append(job)
            return queue.count
        }
        if let here = drainerOfCurrentThread() {
            // Jobs waiting beyond this one: a second loop shares them. (This loop may also be past its
            // shutdown, from its last callbacks: then another loop, or Swift's global executor, takes it.)
            if !schedule(here, taskExecutor) || (waiting > 1 && drainers.count > 1) {
                scheduleAnother(than: here, taskExecutor)
            }
        } else {
            scheduleAnother(than: nil, taskExecutor)
        }
    }

    /// The drainer of the loop running on this thread, when it is one of the group's.
    private func drainerOfCurrentThread() -> Drainer? {
        for drainer in drainers where drainer.loop.isCurrent { return drainer }
        return nil
    }

    /// Queues a drain on `drainer`'s loop unless one is queued there. Returns false when the loop is gone.
    private func schedule(_ drainer: Drainer, _ taskExecutor: UnownedTaskExecutor) -> Bool {
        guard !drainer.isGone.load(ordering: .relaxed) else { return false }
        if drainer.isScheduled.load(ordering: .relaxed) { return true }
        guard !drainer.isScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return true }
        do {
            try drainer.loop.append(Job { [self] in drain(drainer, taskExecutor) }, isExecutorJob: true)
            return true
        } catch {
            drainer.isGone.store(true, ordering: .relaxed)
            drainer.isScheduled.store(false, ordering: .relaxed)
            return false
        }
    }

    /// Queues a drain on one loop other than `excluded` that has none queued, starting from the cursor: an
    /// awake one (running, or spinning for work, ``WakeSpin``) if there is one, so the job costs no wake-up;
    /// else the first. When every loop is gone, hands the waiting jobs to Swift's global executor.
    private func scheduleAnother(than excluded: Drainer?, _ taskExecutor: UnownedTaskExecutor) {
        let count = drainers.count
        // Read, and moved past a loop only when one is asked: a burst's pushes that find every other loop
        // draining already (most of a fan-out's) change no shared cache line.
        let start = cursor.load(ordering: .relaxed)
        // Whether a loop that is still there has a drain queued, which will take the jobs.
        var covered = excluded.map { $0.isScheduled.load(ordering: .relaxed) } ?? false
        for pass in 0..<2 {
            let wakingOneUp = pass == 1
            for offset in 0..<count {
                let drainer = drainers[(start &+ offset) % count]
                if drainer === excluded || drainer.isGone.load(ordering: .relaxed) { continue }
                if drainer.isScheduled.load(ordering: .relaxed) {
                    covered = true
                    continue
                }
                if !wakingOneUp && drainer.loop.queue.isLoopWaiting { continue }
                if schedule(drainer, taskExecutor) {
                    cursor.store((start + offset + 1) % count, ordering: .relaxed)
                    return
                }
            }
        }
        if !covered { handAllToGlobalExecutor() }
    }

    /// A drain on `drainer`'s loop: jobs until the queue is empty, or ``drainBudget`` of them and then
    /// again in the loop's next iteration.
    private func drain(_ drainer: Drainer, _ taskExecutor: UnownedTaskExecutor) {
        for _ in 0..<Self.drainBudget {
            // The flag drops under the lock that finds the queue empty: a push after that sees no drain
            // and queues one, a push before it is taken here.
            let job = jobs.withLock { queue in
                let job = queue.popFirst()
                if job == nil { drainer.isScheduled.store(false, ordering: .relaxed) }
                return job
            }
            guard let job else { return }
            job.runSynchronously(on: taskExecutor)
        }
        do {
            try drainer.loop.append(Job { [self] in drain(drainer, taskExecutor) }, isExecutorJob: true)
        } catch {
            drainer.isGone.store(true, ordering: .relaxed)
            drainer.isScheduled.store(false, ordering: .relaxed)
            scheduleAnother(than: drainer, taskExecutor)
        }
    }

    /// Every loop has shut down: the jobs go on on Swift's global concurrent executor.
    private func handAllToGlobalExecutor() {
        for job in jobs.withLock({ $0.removeAll() }) {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }
}
