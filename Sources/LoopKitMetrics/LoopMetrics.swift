import CoreMetrics
import LoopKit
import Synchronization

/// A loop's iterations as swift-metrics: each iteration's report (``LoopKit/IterationReport``) recorded
/// into the metrics system a deployer bootstrapped (Prometheus, StatsD, OpenTelemetry…).
///
/// ```swift
/// let group = try LoopGroup(threads: 2)
/// for (index, loop) in group.loops.enumerated() {
///     try LoopMetrics.record(loop, name: "http-\(index)")
/// }
/// ```
///
/// Metrics, each with the dimension `loop` = the name given:
///
/// | metric | kind | what |
/// |---|---|---|
/// | `loopkit.loop.iteration.duration` | timer (histogram) | each iteration's wall time |
/// | `loopkit.loop.poll.wait` | timer (histogram) | phase 1's wait: with the above, the poll-wait ratio (how idle the loop is) |
/// | `loopkit.loop.drain.size` | recorder (histogram) | jobs each drain ran |
/// | `loopkit.loop.queue.depth` | gauge | jobs waiting for the next drain |
/// | `loopkit.loop.timer.lateness` | timer (histogram) | the worst lateness of the timers an iteration fired (only iterations that fired one) |
/// | `loopkit.loop.iterations` | counter | iterations |
/// | `loopkit.loop.wakeups` | counter | cross-thread wake-ups of the loop |
/// | `loopkit.loop.budget.overruns` | counter | iterations in which a budgeted job ran past its budget |
///
/// Recording installs the loop's iteration observer (one per loop: it replaces another). Each iteration
/// then costs the observer's clock readings and one call per metric into the factory's handlers.
public enum LoopMetrics {
    /// Records `loop`'s iterations from now on, under the dimension `loop` = `name`.
    ///
    /// - Parameters:
    ///   - loop: The loop.
    ///   - name: The value of the `loop` dimension.
    ///   - factory: The metrics factory (the one bootstrapped by default).
    /// - Throws: `EventLoopError.shutDown` once the loop refuses work.
    ///
    /// Safe from any thread (from another thread, recording starts after the loop's next drain).
    public static func record(_ loop: EventLoop, name: String, factory: any MetricsFactory = MetricsSystem.factory) throws(EventLoopError) {
        let instruments = Instruments(loop: loop, name: name, factory: factory)
        try loop.setIterationObserver { report in instruments.record(report) }
    }

    /// Stops recording `loop`'s iterations (removes its iteration observer).
    ///
    /// - Parameter loop: The loop.
    /// - Throws: `EventLoopError.shutDown` once the loop refuses work.
    ///
    /// Safe from any thread.
    public static func stopRecording(_ loop: EventLoop) throws(EventLoopError) {
        try loop.setIterationObserver(nil)
    }

    /// The metric names, for dashboards and tests.
    public enum Name {
        public static let iterationDuration = "loopkit.loop.iteration.duration"
        public static let pollWait = "loopkit.loop.poll.wait"
        public static let drainSize = "loopkit.loop.drain.size"
        public static let queueDepth = "loopkit.loop.queue.depth"
        public static let timerLateness = "loopkit.loop.timer.lateness"
        public static let iterations = "loopkit.loop.iterations"
        public static let wakeUps = "loopkit.loop.wakeups"
        public static let budgetOverruns = "loopkit.loop.budget.overruns"
    }

    /// One sentence on each metric, by name (``Name``): a backend's help text, such as Prometheus's
    /// `# HELP` line (swift-metrics itself carries none).
    ///
    /// Safe from any thread.
    public static let descriptions: [String: String] = [
        Name.iterationDuration: "Wall time of each event-loop iteration, in seconds.",
        Name.pollWait: "Time each event-loop iteration waited in its poll for I/O, timers or wake-ups, in seconds.",
        Name.drainSize: "Jobs run by each drain of the event loop's queue.",
        Name.queueDepth: "Jobs waiting in the event loop's queue for its next drain.",
        Name.timerLateness: "Worst lateness of the timers an event-loop iteration fired, in seconds (iterations that fired one).",
        Name.iterations: "Event-loop iterations run.",
        Name.wakeUps: "Times another thread woke the event loop up.",
        Name.budgetOverruns: "Event-loop iterations in which a budgeted job ran past its time budget.",
    ]

    /// The handlers of one loop's metrics; used on the loop's thread only (the observer), `Sendable` for
    /// the observer closure. The wake-up count is read on the loop's thread too.
    private final class Instruments: Sendable {
        let loop: EventLoop
        let iterationDuration: CoreMetrics.Timer
        let pollWait: CoreMetrics.Timer
        let drainSize: Recorder
        let queueDepth: Gauge
        let timerLateness: CoreMetrics.Timer
        let iterations: Counter
        let wakeUps: Counter
        let budgetOverruns: Counter
        /// The wake-up count already recorded.
        let recordedWakeUps: Atomic<UInt64>

        init(loop: EventLoop, name: String, factory: any MetricsFactory) {
            self.loop = loop
            let dimensions = [("loop", name)]
            iterationDuration = CoreMetrics.Timer(label: Name.iterationDuration, dimensions: dimensions, factory: factory)
            pollWait = CoreMetrics.Timer(label: Name.pollWait, dimensions: dimensions, factory: factory)
            drainSize = Recorder(label: Name.drainSize, dimensions: dimensions, aggregate: true, factory: factory)
            queueDepth = Gauge(label: Name.queueDepth, dimensions: dimensions, factory: factory)
            timerLateness = CoreMetrics.Timer(label: Name.timerLateness, dimensions: dimensions, factory: factory)
            iterations = Counter(label: Name.iterations, dimensions: dimensions, factory: factory)
            wakeUps = Counter(label: Name.wakeUps, dimensions: dimensions, factory: factory)
            budgetOverruns = Counter(label: Name.budgetOverruns, dimensions: dimensions, factory: factory)
            recordedWakeUps = Atomic(loop.wakeUpCount)
        }

        func record(_ report: IterationReport) {
            iterationDuration.recordNanoseconds(nanoseconds(report.total))
            pollWait.recordNanoseconds(nanoseconds(report.pollWait))
            drainSize.record(report.drainedJobs)
            queueDepth.record(report.queueDepth)
            if report.timersFired > 0 { timerLateness.recordNanoseconds(nanoseconds(report.worstTimerLateness)) }
            iterations.increment()
            let wakeUpCount = loop.wakeUpCount
            let recorded = recordedWakeUps.exchange(wakeUpCount, ordering: .relaxed)
            if wakeUpCount > recorded { wakeUps.increment(by: Int64(clamping: wakeUpCount - recorded)) }
            if report.budgetOverrun { budgetOverruns.increment() }
        }

        /// One division of the duration's attoseconds (`components` costs two wider ones).
        private func nanoseconds(_ duration: Duration) -> Int64 {
            Int64(truncatingIfNeeded: duration.attoseconds / 1_000_000_000)
        }
    }
}
