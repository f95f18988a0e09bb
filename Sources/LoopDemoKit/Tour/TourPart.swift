#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import LoopKit
import Synchronization

/// One part of the tour: it sets up its work on the loop, runs the loop until the work ends, and
/// reports.
public protocol TourPart: Sendable {
    /// A short identifier ("responsiveness"), used in JSON output.
    var id: String { get }
    /// The heading ("Responsiveness").
    var title: String { get }
    /// One sentence on what the part shows.
    var blurb: String { get }
    /// Runs the part on `context.loop` (on the loop's thread) and returns how it ended.
    ///
    /// The part must end promptly, reporting what completed, once ``PartContext/cancel()`` is called.
    func run(_ context: PartContext) throws -> PartOutcome
}

/// How a part ended.
public enum PartOutcome: String, Sendable {
    case completed
    case cancelled
}

/// What a running part gets: the loop, the output, the settings, and its cancellation (Ctrl-C).
///
/// Safe from any thread.
public final class PartContext: Sendable {
    public let loop: EventLoop
    public let output: DemoOutput
    public let settings: TourSettings
    private let cancelled = Atomic<Bool>(false)
    private let cancelAction = Lock<(@Sendable () -> Void)?>(nil)

    init(loop: EventLoop, output: DemoOutput, settings: TourSettings) {
        self.loop = loop
        self.output = output
        self.settings = settings
    }

    /// Whether the part was asked to stop. Safe from any thread.
    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Sets what cancelling the part does (replacing the previous action); runs it at once if the part is
    /// already cancelled. Safe from any thread.
    public func onCancel(_ action: @escaping @Sendable () -> Void) {
        cancelAction.withLock { $0 = action }
        if isCancelled { cancelAction.withLock { $0.take() }?() }
    }

    /// Asks the part to stop: sets ``isCancelled`` and runs the cancel action once. Safe from any thread.
    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cancelAction.withLock { $0.take() }?()
    }
}

/// Sizes and timings of the tour's parts.
public struct TourSettings: Sendable {
    /// Items in the responsiveness part.
    public var items = 1_000_000
    /// The ArrayProcessor budget in the responsiveness part.
    public var budget: ProcessingBudget = .default
    /// Items in the per-item comparison (nil: no comparison).
    public var perItemItems: Int? = 3_000
    /// The synthetic work per item, in nanoseconds (calibrated at run time, so the tour takes as long in
    /// a debug build as in a release build).
    public var nanosecondsPerItem: UInt64 = 2_000
    /// Items in each of the progress tree's three jobs.
    public var treeItems = [400_000, 250_000, 600_000]
    /// Background threads and invokes per thread in the cross-thread part.
    public var producers = 4
    public var invokesPerProducer = 250_000
    /// Scales the step sequence's and the list's simulated delays (1 = the tour's pace).
    public var pace = 1.0

    public init() {}

    /// The tour at full size (about 10 s).
    public static let standard = TourSettings()

    /// A small tour for tests and CI (about 2 s).
    public static var quick: TourSettings {
        var settings = TourSettings()
        settings.items = 100_000
        settings.perItemItems = 1_000
        settings.treeItems = [40_000, 25_000, 60_000]
        settings.invokesPerProducer = 20_000
        settings.pace = 0.3
        return settings
    }

    /// `milliseconds` scaled by ``pace``.
    func paced(_ milliseconds: Int) -> Duration {
        .milliseconds(max(1, Int((Double(milliseconds) * pace).rounded())))
    }
}

/// A demo error with a message.
struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Monotonic nanoseconds.
func now() -> UInt64 { SystemLoopClock().nanoseconds() }

/// The CPU time the calling thread has used, in nanoseconds: with ``now()``, it tells time spent working
/// from time spent waiting for a core (another process running).
func threadCPUTime() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// A counter that closures on any thread can share.
final class Counter: Sendable {
    private let atomic = Atomic<Int>(0)
    /// Adds `amount` and returns the new value.
    @discardableResult
    func add(_ amount: Int = 1) -> Int { atomic.add(amount, ordering: .acquiringAndReleasing).newValue }
    var value: Int { atomic.load(ordering: .acquiring) }
}

/// A value that closures on any thread can share, under a lock.
final class Shared<Value: Sendable>: Sendable {
    private let lock: Lock<Value>
    init(_ value: Value) { lock = Lock(value) }
    var value: Value {
        get { lock.withLock { $0 } }
        set { lock.withLock { $0 = newValue } }
    }
    func withLock<R: Sendable>(_ body: @Sendable (inout Value) -> R) -> R { lock.withLock { body(&$0) } }
}
