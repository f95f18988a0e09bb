import Synchronization

/// A handle on an array-processing job started with `EventLoop.process(_:budget:each:update:completion:)`.
///
/// Cancel it from any thread; watch it through its ``progress``. The job itself runs on its loop's
/// thread, a chunk per iteration.
///
/// Safe from any thread.
public final class ProcessingJob: Sendable {
    /// The job's progress: `totalUnitCount` is the number of items, `completedUnitCount` advances once per
    /// iteration (with `update`).
    ///
    /// It joins the current ``TaskProgress`` (`withCurrent` / `becomeCurrent`) of the code that started
    /// the job, if there is one. Cancelling it (or an ancestor) cancels the job.
    ///
    /// Safe from any thread.
    public let progress: TaskProgress

    /// The job's state, shared with the progress's cancellation handler (no reference cycle).
    @usableFromInline let control: ProcessingControl

    /// Creates the handle for `count` items; the progress joins the current progress, if any.
    @usableFromInline
    init(count: Int) {
        control = ProcessingControl()
        progress = TaskProgress(totalUnitCount: Int64(count))
        let control = control
        // Cancelling the progress (or a parent) cancels the job; a progress born cancelled runs this at once.
        progress.cancellationHandler = { control.requestCancel() }
    }

    /// Cancels the job: no item starts after the job notices, and its completion reports
    /// ``ProcessingOutcome/cancelled`` on the loop, at the latest in the loop's next iteration.
    ///
    /// An item already running finishes. Cancelling a job that has completed (or cancelling twice) does
    /// nothing. The job's ``progress`` is cancelled too.
    ///
    /// Safe from any thread.
    public func cancel() {
        if control.requestCancel() { progress.cancel() }
    }

    /// Whether cancellation was requested before the job completed. Safe from any thread.
    public var isCancelled: Bool {
        let state = control.state
        return state == ProcessingControl.cancelRequested || state == ProcessingControl.completedCancelled
    }

    /// Whether the job has finished (succeeded, failed or cancelled): its completion handler has been
    /// called (or is running).
    ///
    /// Safe from any thread.
    public var isFinished: Bool { control.state >= ProcessingControl.completedSucceeded }
}

/// The lock-free state of a job: running → cancel requested → completed (one of three ways).
@usableFromInline
final class ProcessingControl: Sendable {
    static let running: UInt8 = 0
    static let cancelRequested: UInt8 = 1
    static let completedSucceeded: UInt8 = 2
    static let completedCancelled: UInt8 = 3
    static let completedFailed: UInt8 = 4

    private let atomic = Atomic<UInt8>(ProcessingControl.running)

    init() {}

    var state: UInt8 { atomic.load(ordering: .acquiring) }

    /// Whether a cancel was requested and the job has not completed yet: one relaxed load.
    @inline(__always)
    var isCancelRequested: Bool { atomic.load(ordering: .relaxed) == Self.cancelRequested }

    /// Running → cancel requested. Returns false when the job completed or was already cancelled.
    @discardableResult
    func requestCancel() -> Bool {
        atomic.compareExchange(expected: Self.running, desired: Self.cancelRequested,
                               ordering: .acquiringAndReleasing).exchanged
    }

    /// Marks the job completed with `outcome`'s code. Loop thread only; called once.
    func complete(_ code: UInt8) {
        atomic.store(code, ordering: .releasing)
    }
}
