import Synchronization

/// One activation of a progress as the current progress, with the pending units its first implicit child
/// will receive.
final class CurrentFrame: Sendable {
    let progress: TaskProgress
    let pendingUnitCount: Int64
    /// Activation order across all threads and tasks: the most recent activation is the current one.
    let order: UInt64
    /// Set once the pending units were given to a child or completed.
    private let claimed = Atomic<Bool>(false)

    private static let sequence = Atomic<UInt64>(0)

    /// The frame made current by `withCurrent`, carried by the task (and across `await`).
    @TaskLocal static var taskFrame: CurrentFrame?

    init(progress: TaskProgress, pendingUnitCount: Int64) {
        self.progress = progress
        self.pendingUnitCount = pendingUnitCount
        self.order = CurrentFrame.sequence.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Takes the pending units for a child; true for exactly one caller.
    func claim() -> Bool {
        !claimed.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Ends the activation: unclaimed pending units count as completed, as with `-resignCurrent`.
    func end() {
        if claim() { progress.increment(by: pendingUnitCount) }
    }

    /// The innermost frame: the most recent of this thread's `becomeCurrent` frame and the task's frame.
    static var innermost: CurrentFrame? {
        let threadFrame = ThreadProgressFrames.existing?.frames.last
        guard let taskFrame else { return threadFrame }
        guard let threadFrame else { return taskFrame }
        return threadFrame.order > taskFrame.order ? threadFrame : taskFrame
    }
}

extension TaskProgress {
    /// The progress that new ``TaskProgress`` instances join as children, if any.
    ///
    /// The innermost of the task's `withCurrent(pendingUnitCount:_:)` scope and this thread's
    /// ``becomeCurrent(withPendingUnitCount:)``.
    ///
    /// Safe from any thread (the answer is per task and per thread).
    public static var current: TaskProgress? { CurrentFrame.innermost?.progress }

    /// Runs `body` with this progress as ``current``, so the first progress created inside becomes its
    /// child standing for `pendingUnitCount` units.
    ///
    /// The scope is task-local. If no child claimed the units by the end of `body`, they count as
    /// completed, as with Foundation's `resignCurrent`.
    ///
    /// Safe from any thread.
    /// - Parameters:
    ///   - pendingUnitCount: The units of this progress that the work in `body` accounts for.
    ///   - body: The work; it runs synchronously on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the pending units are settled either way.
    public func withCurrent<R>(pendingUnitCount: Int64, _ body: () throws -> R) rethrows -> R {
        let frame = CurrentFrame(progress: self, pendingUnitCount: pendingUnitCount)
        defer { frame.end() }
        return try CurrentFrame.$taskFrame.withValue(frame, operation: body)
    }

    /// Runs async `body` with this progress as ``current``, across every `await` inside it and in child
    /// tasks it creates, so the first progress created inside becomes a child standing for
    /// `pendingUnitCount` units.
    ///
    /// If no child claimed the units by the end of `body`, they count as completed.
    ///
    /// Safe from any thread or task.
    /// - Parameters:
    ///   - pendingUnitCount: The units of this progress that the work in `body` accounts for.
    ///   - isolation: The caller's isolation, inherited by `body`.
    ///   - body: The work.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the pending units are settled either way.
    public func withCurrent<R>(
        pendingUnitCount: Int64,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> R
    ) async rethrows -> R {
        let frame = CurrentFrame(progress: self, pendingUnitCount: pendingUnitCount)
        defer { frame.end() }
        return try await CurrentFrame.$taskFrame.withValue(frame, operation: body)
    }

    /// Makes this progress ``current`` on the calling thread until ``resignCurrent()``, for parity with
    /// `-[NSProgress becomeCurrentWithPendingUnitCount:]`.
    ///
    /// The activation is thread-local: prefer `withCurrent(pendingUnitCount:_:)` in async code,
    /// where a task may resume on another thread.
    ///
    /// Call from the thread that will call ``resignCurrent()``.
    /// - Parameter pendingUnitCount: The units of this progress that the next child created accounts for.
    public func becomeCurrent(withPendingUnitCount pendingUnitCount: Int64) {
        ThreadProgressFrames.forCurrentThread.frames.append(
            CurrentFrame(progress: self, pendingUnitCount: pendingUnitCount))
    }

    /// Ends this thread's innermost ``becomeCurrent(withPendingUnitCount:)`` of this progress; unclaimed
    /// pending units count as completed.
    ///
    /// Call on the thread that called ``becomeCurrent(withPendingUnitCount:)``; this progress must be that
    /// thread's innermost thread-local current progress (a precondition).
    public func resignCurrent() {
        let frames = ThreadProgressFrames.existing
        precondition(frames?.frames.last?.progress === self,
                     "resignCurrent() without a matching becomeCurrent(withPendingUnitCount:) on this thread")
        frames!.frames.removeLast().end()
    }
}
