/// What one iteration of a loop did and how long each phase took: the value an iteration observer
/// receives (``EventLoop/setIterationObserver(_:)``).
///
/// The four phase durations add up to ``total`` exactly: each is the time between two readings of the
/// loop's clock (a ``LoopClock``: virtual time under a `LoopDriver`, so a test gets exact figures).
///
/// A value: safe from any thread.
public struct IterationReport: Sendable, Hashable, CustomStringConvertible {
    /// The iteration's number (``EventLoop/iteration`` while it ran).
    public var iteration: UInt64
    /// Phase 1: time waiting in the poll until the first I/O callback ran (the whole poll when none
    /// did). For an attached loop, whose poll is the host's, zero.
    public var pollWait: Duration
    /// Phase 2, first half: from the first I/O callback (a watch, a connection) to the poll's return.
    public var ioCallbacks: Duration
    /// Phase 2, second half: due timers.
    public var timers: Duration
    /// Phase 3: the drain of the next-iteration queue.
    public var drain: Duration
    /// The whole iteration: the sum of the four phases.
    public var total: Duration
    /// Callbacks the loop ran for I/O (watches and connections).
    public var ioCallbackCount: Int
    /// Timers fired.
    public var timersFired: Int
    /// Jobs the drain ran.
    public var drainedJobs: Int
    /// Jobs queued and waiting for the next drain when the iteration ended.
    public var queueDepth: Int
    /// The latest a timer fired after its deadline in this iteration; zero when none fired.
    public var worstTimerLateness: Duration
    /// Whether a time-budgeted job (`process(_:budget:…)`) ran a chunk longer than its budget.
    public var budgetOverrun: Bool

    /// Creates a report from its parts (mainly for tests and for feeding metrics from elsewhere).
    public init(iteration: UInt64, pollWait: Duration = .zero, ioCallbacks: Duration = .zero, timers: Duration = .zero,
                drain: Duration = .zero, ioCallbackCount: Int = 0, timersFired: Int = 0, drainedJobs: Int = 0,
                queueDepth: Int = 0, worstTimerLateness: Duration = .zero, budgetOverrun: Bool = false) {
        self.iteration = iteration
        self.pollWait = pollWait
        self.ioCallbacks = ioCallbacks
        self.timers = timers
        self.drain = drain
        self.total = pollWait + ioCallbacks + timers + drain
        self.ioCallbackCount = ioCallbackCount
        self.timersFired = timersFired
        self.drainedJobs = drainedJobs
        self.queueDepth = queueDepth
        self.worstTimerLateness = worstTimerLateness
        self.budgetOverrun = budgetOverrun
    }

    /// One line, such as "iteration 42: 1.2 ms (poll 1 ms, I/O 100 µs ×3, timers 0 ns ×0, drain 100 µs ×5), 0 queued".
    public var description: String {
        "iteration \(iteration): \(total) (poll \(pollWait), I/O \(ioCallbacks) ×\(ioCallbackCount), timers \(timers) ×\(timersFired), "
            + "drain \(drain) ×\(drainedJobs)), \(queueDepth) queued"
            + (timersFired > 0 ? ", worst timer lateness \(worstTimerLateness)" : "") + (budgetOverrun ? ", budget overrun" : "")
    }
}

/// The measurements of the iteration in progress, kept only while an observer is installed. Loop thread.
struct IterationMeasurement {
    var firstIOCallbackAt: UInt64?
    var ioCallbackCount = 0
    var timersFired = 0
    var worstTimerLateness: UInt64 = 0

    mutating func reset() { self = IterationMeasurement() }
}
