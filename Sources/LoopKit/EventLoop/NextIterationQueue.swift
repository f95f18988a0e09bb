import Synchronization

/// A loop's next-iteration queue: the work phase 3 of each iteration drains (rules R1–R3, R7, and the
/// refusal half of R10).
///
/// The queue has two ends:
/// - the **outbox**, which only the loop thread touches, without a lock: what the loop thread queues,
///   plus a spare buffer so a steady-state drain never allocates;
/// - the **inbox**, under a `YieldingLock` (which never sleeps in the kernel nor hands itself over, so
///   producers on an oversubscribed machine do not convoy behind it): what other threads queue, whether
///   the queue still accepts work, and whether the loop has already been told about new work.
///
/// The protocol, in the order things happen:
/// 1. ``pushFromAnotherThread(_:)`` appends to the inbox and returns true for the first job since the
///    last drain: that caller, and only that one, wakes the loop (R7: a burst costs one wake-up) — and
///    only if ``loopMayBeAsleep`` says the loop is blocked in its poll, or about to be. A loop that is
///    running finds the job before it next waits: ``prepareToSleep()`` announces the wait, then looks at
///    the inbox once more (the two sides' store-then-load under a sequentially consistent order, so at
///    least one of them sees the other). A job queued to a busy loop therefore costs no system call.
/// 2. ``pushOnLoopThread(_:)`` appends to the outbox. If other threads' jobs are waiting in the inbox it
///    first moves them ahead of the new job, so a job queued after another (in happens-before order) never
///    runs before it, whichever threads queued them (R1). It returns true for the first job since the last
///    drain: an attached loop must then ask its host's base for a drain.
/// 3. ``takeSnapshot()`` (phase 3) takes everything queued so far, outbox then inbox, and clears the
///    wake-up flag. Jobs queued while the snapshot runs wait for the next drain (R2) and are in the next
///    snapshot (R3).
/// 4. ``putBack(_:)`` returns what a drain limit left unrun to the front, ahead of anything queued since.
/// 5. ``close()`` makes every later push throw ``EventLoopError/shutDown`` (R10); what is queued stays
///    until drained. Swift concurrency jobs (``EventLoop/enqueue(_:)-(ExecutorJob)``) cannot be refused:
///    they are still taken, with `acceptingExecutorJobs`, until ``seal()`` at the end of the final drain,
///    so a task resumed by the shutdown itself (a connection ending, a waiter told) runs to its end there.
///
/// Safe from any thread where a method says so; the others belong to the loop thread (checked in debug
/// builds).
final class NextIterationQueue: Sendable {
    /// What other threads queue, under the lock.
    private struct Inbox: ~Copyable {
        /// Jobs other threads queued since the last snapshot, in the order they were queued.
        var jobs = JobBuffer(capacity: 64)
        /// False once the queue is closed.
        var isOpen = true
        /// False once the queue is sealed: not even a Swift concurrency job is taken.
        var takesExecutorJobs = true
        /// The loop has been (or is being) woken for the jobs in the inbox.
        var wakeUpSent = false
    }

    /// What only the loop thread touches.
    private struct Outbox: ~Copyable {
        /// Jobs the loop thread queued since the last snapshot, in order; this may include inbox jobs
        /// moved ahead of them.
        var jobs = JobBuffer()
        /// The buffer the next snapshot swaps in, so pushes never reallocate in steady state.
        var spare = JobBuffer()
        /// Inbox jobs were moved to the outbox since the last snapshot, so the inbox's wake-up flag must
        /// still be cleared at the next one.
        var movedInboxEarly = false
        /// A drain has been asked for since the last snapshot.
        var drainRequested = false
    }

    private let inbox = YieldingLock(Inbox())
    /// A lock-free copy of "the inbox holds jobs", set under the lock.
    private let inboxHasJobs = Atomic<Bool>(false)
    /// A lock-free copy of the inbox's `isOpen`, set under the lock.
    private let accepting = Atomic<Bool>(true)
    /// A lock-free copy of the inbox's `takesExecutorJobs`, set under the lock.
    private let acceptingExecutorJobs = Atomic<Bool>(true)
    /// The loop announced that it waits (or is about to wait) in its poll: a first push must wake it.
    private let asleep = Atomic<Bool>(false)
    private let outbox: LoopConfined<Outbox>

    /// Creates an empty, open queue belonging to `owner`'s loop thread.
    init(owner: ThreadID) {
        outbox = LoopConfined(Outbox(), owner: owner)
    }

    // MARK: Pushing

    /// Queues a job from the loop thread.
    ///
    /// - Returns: Whether this is the first job since the last drain asked for one (an attached loop
    ///   must then ask its host's base for a drain).
    /// - Parameter isExecutorJob: A Swift concurrency job, taken after ``close()`` until ``seal()``.
    /// - Throws: ``EventLoopError/shutDown`` once closed.
    @inline(__always)
    func pushOnLoopThread(_ job: consuming Job, isExecutorJob: Bool = false) throws(EventLoopError) -> Bool {
        guard accepting.load(ordering: .relaxed)
                || (isExecutorJob && acceptingExecutorJobs.load(ordering: .relaxed)) else { throw .shutDown }
        if inboxHasJobs.load(ordering: .acquiring) { moveInboxToOutbox() }
        outbox.value.jobs.append(job)
        guard !outbox.value.drainRequested else { return false }
        outbox.value.drainRequested = true
        return true
    }

    /// Queues a job from a thread other than the loop's.
    ///
    /// - Returns: Whether the caller must wake the loop: true for exactly one push between two snapshots.
    /// - Parameter isExecutorJob: A Swift concurrency job, taken after ``close()`` until ``seal()``.
    /// - Throws: ``EventLoopError/shutDown`` once closed; the job is not kept.
    ///
    /// Safe from any thread.
    @inline(__always)
    func pushFromAnotherThread(_ job: consuming Job, isExecutorJob: Bool = false) throws(EventLoopError) -> Bool {
        try inbox.withLock(handing: job) { (inbox, job) throws(EventLoopError) -> Bool in
            guard inbox.isOpen || (isExecutorJob && inbox.takesExecutorJobs) else { throw .shutDown }
            inbox.jobs.append(job)
            // Only the first job since the inbox was emptied writes the flag: the loop (spinning or
            // polling) reads it, and a write per push would take its cache line from the loop every time.
            if inbox.jobs.count == 1 { inboxHasJobs.store(true, ordering: .releasing) }
            guard !inbox.wakeUpSent else { return false }
            inbox.wakeUpSent = true
            return true
        }
    }

    /// After a push that returned true: whether the loop may be waiting in its poll, so that the pusher
    /// must wake it. False means the loop is running and will see the job before it next waits.
    ///
    /// Safe from any thread.
    var loopMayBeAsleep: Bool {
        // Orders the push's store of `inboxHasJobs` before this load (Dekker with prepareToSleep()).
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        return asleep.load(ordering: .sequentiallyConsistent)
    }

    /// Whether the loop has announced a wait in its poll, as last seen; a hint for choosing among loops
    /// (a loop that is running or spinning takes a job without a wake-up), not part of the protocol.
    ///
    /// Safe from any thread.
    var isLoopWaiting: Bool { asleep.load(ordering: .relaxed) }

    /// Announces that the loop is about to wait in its poll, then looks at the inbox once more.
    ///
    /// - Returns: Whether the loop may wait: false when other threads' jobs arrived (the loop then stays
    ///   awake and polls without waiting). Loop thread only.
    func prepareToSleep() -> Bool {
        asleep.store(true, ordering: .sequentiallyConsistent)
        guard !inboxHasJobs.load(ordering: .sequentiallyConsistent) else {
            asleep.store(false, ordering: .relaxed)
            return false
        }
        return true
    }

    /// The loop's poll returned: pushes from now on need not wake it. (A pusher that still reads the old
    /// value wakes it once more, which ends one later poll early: harmless.) Loop thread only.
    func awoke() {
        asleep.store(false, ordering: .relaxed)
    }

    /// Moves the inbox behind the outbox (R1 for a loop-thread push). Loop thread only.
    private func moveInboxToOutbox() {
        inbox.withLock { inbox in
            outbox.value.jobs.append(contentsOf: &inbox.jobs)
            inboxHasJobs.store(false, ordering: .relaxed)
        }
        outbox.value.movedInboxEarly = true
    }

    // MARK: Draining

    /// Takes every job queued so far, in order, for phase 3 (R2, R3); the queue goes on empty. Clears the
    /// wake-up flag, so the next push from another thread wakes the loop again. Loop thread only.
    func takeSnapshot() -> JobBuffer {
        var batch = JobBuffer(capacity: 0)
        swap(&outbox.value.jobs, &batch)
        swap(&outbox.value.jobs, &outbox.value.spare)
        outbox.value.drainRequested = false
        if inboxHasJobs.load(ordering: .acquiring) || outbox.value.movedInboxEarly {
            outbox.value.movedInboxEarly = false
            inbox.withLock { inbox in
                batch.append(contentsOf: &inbox.jobs)
                inboxHasJobs.store(false, ordering: .relaxed)
                inbox.wakeUpSent = false
            }
        }
        return batch
    }

    /// Returns the unrun rest of a snapshot to the front of the queue, ahead of anything queued since
    /// (R1 under a drain limit). Loop thread only.
    ///
    /// - Returns: Whether a drain must be asked for (none was since the snapshot).
    func putBack(_ rest: inout JobBuffer) -> Bool {
        rest.append(contentsOf: &outbox.value.jobs)
        swap(&rest, &outbox.value.jobs)
        guard !outbox.value.drainRequested else { return false }
        outbox.value.drainRequested = true
        return true
    }

    /// Keeps a drained snapshot's (empty) buffer for the next one. Loop thread only.
    func recycle(_ buffer: consuming JobBuffer) {
        outbox.value.spare = buffer
    }

    // MARK: State

    /// The number of jobs queued and not yet taken by a drain: the loop thread's and other threads'.
    /// Takes the inbox's lock (for an iteration observer, not for the hot path). Loop thread only.
    var depth: Int {
        outbox.value.jobs.count + inbox.withLock { $0.jobs.count }
    }

    /// Whether any job is queued. Loop thread only.
    var hasJobs: Bool { !outbox.value.jobs.isEmpty || inboxHasJobs.load(ordering: .acquiring) }

    /// Whether other threads queued jobs the loop has not taken yet. Safe from any thread.
    var hasJobsFromOtherThreads: Bool { inboxHasJobs.load(ordering: .acquiring) }

    /// Whether the queue still accepts jobs. Safe from any thread.
    var isAccepting: Bool { accepting.load(ordering: .acquiring) }

    /// Refuses every later push (R10); queued jobs stay until drained. Closing twice does nothing.
    /// Safe from any thread.
    func close() {
        inbox.withLock { inbox in
            inbox.isOpen = false
            accepting.store(false, ordering: .releasing)
        }
    }

    /// Refuses even Swift concurrency jobs from now on, if nothing is queued: the final drain is over.
    /// Checked and sealed under the inbox's lock, so no job from another thread slips in between.
    /// Loop thread only.
    ///
    /// - Returns: Whether the queue was empty and is now sealed; false means drain again first.
    func sealIfEmpty() -> Bool {
        guard outbox.value.jobs.isEmpty else { return false }
        return inbox.withLock { inbox in
            guard inbox.jobs.isEmpty else { return false }
            inbox.isOpen = false
            inbox.takesExecutorJobs = false
            accepting.store(false, ordering: .releasing)
            acceptingExecutorJobs.store(false, ordering: .releasing)
            return true
        }
    }

    /// Releases the loop thread's queued jobs without running them (teardown). The inbox's jobs go with
    /// the queue.
    func releaseOutboxForTeardown() {
        outbox.valueForTeardown.jobs.removeAll()
    }
}
