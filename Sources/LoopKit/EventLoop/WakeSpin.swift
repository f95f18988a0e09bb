/// Whether an owned loop about to wait in its poll first spins a few microseconds watching its inbox, and
/// what it learns from doing so.
///
/// A job queued from another thread to a loop that waits in its poll costs a wake-up: the pusher's
/// `eventfd` write and, on a machine whose idle cores halt (a VM's vCPU does), tens of microseconds
/// before the woken thread runs. Two loops in a conversation (each queues onto the other, as a request
/// hopping to a worker loop and back does) pay that on every hop. A loop that spins briefly instead of
/// waiting sees the next job without sleeping, and the pusher skips the write, because a spinning loop has
/// not announced a wait (``NextIterationQueue/prepareToSleep()``).
///
/// The spin is bounded and adaptive:
/// - a loop spins only when its last wait was ended by another thread's job within ``limitNanoseconds``
///   (or its last spin saw one): a loop whose waits end by I/O, by timers or after longer never spins, so
///   an idle loop uses no CPU and a server's I/O is never polled late;
/// - a spin that saw nothing makes the loop skip its next 2, 4, 8 … 4096 chances to spin: a peer that
///   shares this loop's core cannot run while this loop spins, so spinning against it only delays it;
/// - a spin never runs past the loop's next timer.
///
/// Loop-confined: part of the loop's state, touched by its thread only.
struct WakeSpin {
    /// The longest spin, and the longest wait that counts as a quick answer from another thread.
    static let limitNanoseconds: UInt64 = 20_000
    /// The most waits skipped after spins that saw nothing (2^12).
    static let maximumBackoffExponent = 12

    /// The last wait was ended by another thread's job within the limit, or the last spin saw one.
    private var isConversing = false
    /// Chances to spin still to skip after a spin that saw nothing.
    private var skipsLeft = 0
    /// Spins in a row that saw nothing.
    private var missesInARow = 0

    /// Whether to spin before this wait; counts a skipped chance.
    mutating func shouldSpin() -> Bool {
        guard isConversing else { return false }
        guard skipsLeft == 0 else {
            skipsLeft -= 1
            return false
        }
        return true
    }

    /// The spin saw another thread's job: spin again next time.
    mutating func spinSawJob() {
        missesInARow = 0
        isConversing = true
    }

    /// The spin saw nothing (the loop then waits): skip the next 2^misses chances.
    mutating func spinSawNothing() {
        missesInARow = min(missesInARow + 1, Self.maximumBackoffExponent)
        skipsLeft = 1 << missesInARow
    }

    /// A wait in the poll ended after `nanoseconds`; `byAnotherThreadsJob` when jobs from other threads
    /// were waiting when it returned.
    mutating func waitEnded(afterNanoseconds nanoseconds: UInt64, byAnotherThreadsJob: Bool) {
        isConversing = byAnotherThreadsJob && nanoseconds <= Self.limitNanoseconds
    }
}
