import HeapModule
import Synchronization

/// A loop with a strict next-iteration queue, built on one libevent `event_base`.
///
/// A loop belongs to one thread: the thread that created (or attached) it. That thread drives it with
/// ``run()`` or ``runOnce(blocking:)``; any thread can hand it work with `enqueue(_:)`,
/// ``invoke(_:)`` and ``invokeAndWait(_:)``, or stop it with ``stop()``.
///
/// Each iteration has three phases, always in this order (rule R9):
/// 1. **Poll** for I/O: without waiting when queued work or a due timer is pending, otherwise until an
///    fd is ready, the next timer is due, or another thread wakes the loop.
/// 2. **Run** ready I/O callbacks, then due timers in (deadline, scheduling order).
/// 3. **Drain** the next-iteration queue: exactly the work that was queued before this phase began.
///
/// Queued work runs in the order it was queued (R1), in the first drain that begins after it was queued
/// and never inside the callback that queued it: work queued from an I/O or timer callback of iteration
/// N runs in the drain of N, after that callback returned; work queued from the drain of N runs in
/// N + 1 (rules R2 and R3). See the "Loop phases and the ordering contract" article for all rules.
public final class EventLoop: Sendable {
    /// The thread the loop belongs to.
    @usableFromInline let owner: ThreadID
    /// The clock timers are measured on.
    let timeSource: any LoopClock
    /// Whether a host drives the `event_base` (attached mode).
    let isAttached: Bool
    /// The most queued jobs one drain runs; nil runs the whole snapshot.
    let drainLimit: Int?
    /// libevent's base and the loop's two internal events.
    let events: LoopEvents
    /// The next-iteration queue (R1–R3, R7; it refuses work once closed, R10).
    let queue: NextIterationQueue
    /// Where the loop is in its life (R10); every shutdown path goes through its transitions.
    let lifecycle = Lock(LoopLifecycle())
    /// What to tell waiters whose work is still queued when the loop is freed (R6, R10).
    let cancellations = Lock(Cancellations())
    /// State only the loop thread touches: timers, watches, the spare drain buffer.
    let state: LoopConfined<LoopState>
    /// Iterations so far.
    let iterationCounter = Atomic<UInt64>(0)
    /// Set by ``stop()``; read at the end of each iteration of ``run()``.
    let stopRequested = Atomic<Bool>(false)
    /// True while ``run()`` is on the stack.
    let runActive = Atomic<Bool>(false)
    /// Cross-thread wake-ups sent so far (R7 promises at most one per iteration).
    let wakeUps = Atomic<UInt64>(0)
    /// ``timerSpin`` in nanoseconds.
    let timerSpinNanoseconds = Atomic<UInt64>(0)
    /// The serial executor of actors pinned to the loop (the loop itself is the task executor).
    let isolation = LoopIsolation()
    /// Whether this is ``EventLoop/main``, which also drains Dispatch's main queue (rule R12).
    public let isMain: Bool

    /// Creates a loop with its own `event_base`, belonging to the calling thread.
    ///
    /// - Parameters:
    ///   - clock: The time source for timers; `LoopKitTesting`'s `VirtualClock` makes time manual.
    ///   - drainLimit: At most this many queued jobs run per iteration; the rest run, in order, in the
    ///     iterations after (rule R3 is relaxed, R1 still holds). Nil (the default) runs the snapshot.
    /// - Throws: ``EventLoopError/libevent(_:errno:)`` when libevent cannot create a base;
    ///   ``EventLoopError/invalidArgument(_:)`` for a drain limit below 1.
    ///
    /// Call on the thread that will run the loop. The corresponding libevent call is `event_base_new`.
    public convenience init(clock: any LoopClock = SystemLoopClock(), drainLimit: Int? = nil) throws(EventLoopError) {
        try self.init(base: LibEventBase(), attached: false, clock: clock, drainLimit: drainLimit, owner: .current)
    }

    /// Attaches a loop to a host-owned libevent `event_base` that the host drives.
    ///
    /// The host keeps running its base with `event_base_loop`/`event_base_dispatch`; LoopKit drains its
    /// queue and fires its timers from events it registers on that base, and each drain counts as one
    /// iteration. ``run()`` and ``runOnce(blocking:)`` are refused with ``EventLoopError/attached``.
    /// Tearing the loop down leaves the host's base intact. The host must have created the base after
    /// ``EventLoop/enableThreading()`` so other threads can wake it.
    ///
    /// - Parameters:
    ///   - eventBase: A `struct event_base *`.
    ///   - clock: The time source for timers.
    ///
    /// Call on the thread that drives the base.
    public convenience init(attachingTo eventBase: OpaquePointer, clock: any LoopClock = SystemLoopClock()) throws(EventLoopError) {
        try self.init(base: LibEventBase(borrowing: eventBase), attached: true, clock: clock, drainLimit: nil, owner: .current)
    }

    init(base: LibEventBase, attached: Bool, clock: any LoopClock, drainLimit: Int?, owner: ThreadID,
         isMain: Bool = false) throws(EventLoopError) {
        if let drainLimit, drainLimit < 1 {
            throw .invalidArgument("drainLimit must be at least 1, got \(drainLimit)")
        }
        self.owner = owner
        self.isMain = isMain
        timeSource = clock
        isAttached = attached
        self.drainLimit = drainLimit
        events = LoopEvents(base: base)
        queue = NextIterationQueue(owner: owner)
        state = LoopConfined(LoopState(), owner: owner)
        isolation.bind(to: self)
        try events.install(
            context: Unmanaged.passUnretained(self).toOpaque(),
            tick: { _, _, context in
                Unmanaged<EventLoop>.fromOpaque(context!).takeUnretainedValue().internalEventFired()
            },
            timer: { _, _, context in
                let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeUnretainedValue()
                // Not read here: the due timers run first, then `fireDueTimers` resets the timerfd.
                loop.state.value.timerEventFired = true
                loop.state.value.armedTimerDeadline = nil  // a fired timerfd is disarmed
                loop.internalEventFired()
            },
            wakeUp: { fd, _, context in
                let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeUnretainedValue()
                LoopEvents.acknowledgeWakeUp(fd, edgeTriggered: loop.events.wakeUpIsEdgeTriggered)
                loop.internalEventFired()
            })
    }

    /// Enables libevent's thread support, once per process.
    ///
    /// LoopKit calls this itself before creating a base. A host that will ``init(attachingTo:clock:)``
    /// must call it before creating its own `event_base`, so that other threads can wake that base.
    /// Safe from any thread; idempotent.
    /// - Returns: Whether libevent's thread support is on.
    @discardableResult
    public static func enableThreading() -> Bool { LibEvent.threadingEnabled }

    /// The version of libevent LoopKit runs on. Safe from any thread.
    public static var libeventVersion: String { LibEvent.version }

    deinit {
        // Nothing can reach the loop any more: report every job still queued as cancelled (R10),
        // release timers and watches, then free the events before the base.
        let orphans = cancellations.withLock { $0.takeAll() }
        for cancel in orphans { cancel() }
        queue.releaseOutboxForTeardown()
        state.valueForTeardown.releaseAll()
        events.uninstall()
    }

    // MARK: Identity

    /// Whether the calling thread is the loop's own thread. Safe from any thread.
    @inline(__always)
    @inlinable
    public var isCurrent: Bool { owner.isCurrent }

    /// The loop running an iteration on the calling thread, or nil. Safe from any thread.
    ///
    /// Inside any callback, timer or queued job of a loop, this is that loop.
    public static var current: EventLoop? { CurrentLoop.loop }

    /// The number of iterations the loop has begun (rule R9). Safe from any thread.
    ///
    /// Each ``runOnce(blocking:)`` and each pass of ``run()`` is one iteration; for an attached loop, each
    /// drain of the queue is one. Code running inside a callback sees the iteration it runs in.
    public var iteration: UInt64 { iterationCounter.load(ordering: .relaxed) }

    /// Whether the loop still accepts work (it has not begun to shut down). Safe from any thread.
    public var isAcceptingWork: Bool { queue.isAccepting }

    /// Whether ``run()`` is running. Safe from any thread.
    public var isRunning: Bool { runActive.load(ordering: .sequentiallyConsistent) }

    /// How many times other threads have woken the loop: at most once per iteration however many jobs
    /// they queue (R7), and never for jobs queued while the loop is running or spinning for them (it
    /// finds those before it waits). Safe from any thread.
    public var wakeUpCount: UInt64 { wakeUps.load(ordering: .relaxed) }

    /// The kernel mechanism libevent polls with (`epoll`, `poll`, …). Safe from any thread.
    public var backend: String { events.base.method }

    /// The libevent `struct event_base *` the loop runs on: its own, or the host's when attached.
    ///
    /// Code built on libevent (bufferevents, `evconnlistener`, `evhttp`) can register its events on this
    /// base; their callbacks then run in phase 2 of the loop's iterations, and the next-iteration queue's
    /// rules (R1–R11) still hold for work they enqueue. Do not free the base and do not run
    /// `event_base_loop` on it yourself while the loop is owned by LoopKit.
    ///
    /// Reading the pointer is safe from any thread; use the base on the loop's thread.
    public var eventBase: OpaquePointer { events.base.raw }
}

/// Waiters to notify if the loop is freed before their work runs.
struct Cancellations {
    private var next: UInt64 = 0
    private var handlers: [UInt64: @Sendable () -> Void] = [:]

    mutating func register(_ handler: @escaping @Sendable () -> Void) -> UInt64 {
        next &+= 1
        handlers[next] = handler
        return next
    }

    mutating func remove(_ key: UInt64) { handlers[key] = nil }

    mutating func takeAll() -> [@Sendable () -> Void] {
        defer { handlers = [:] }
        return Array(handlers.sorted { $0.key < $1.key }.map(\.value))
    }
}

/// The loop-thread-only part of a loop (its queue's loop-thread half lives in ``NextIterationQueue``).
struct LoopState: ~Copyable {
    var timers = Heap<TimerEntry>()
    var nextTimerSequence: UInt64 = 0
    /// The deadline the internal libevent timer is set for, if any.
    var armedTimerDeadline: UInt64?
    /// The timerfd fired in this iteration's poll and has not been reset yet (it stays readable until
    /// it is read or set again).
    var timerEventFired = false
    var watches: [ObjectIdentifier: Watch] = [:]
    /// Values that belong to the loop (``EventLoop/localValue(for:_:)``).
    var locals: [ObjectIdentifier: AnyObject] = [:]
    /// The local value asked for last, and its key: a loop's hot path usually asks for one value again
    /// and again (a middleware's per-loop state, once or twice per request), and a comparison costs
    /// less than a hash lookup. Two fields rather than an optional tuple, which would be copied by the
    /// runtime's generic witnesses.
    var lastLocalKey: ObjectIdentifier?
    var lastLocalValue: AnyObject?
    /// True while an iteration (or an attached drain) is on the stack: re-entry is refused (R11).
    var inIteration = false
    /// Callbacks run in the current iteration, for ``EventLoop/runOnce(blocking:)``.
    var callbacksRun = 0
    /// The iteration observer (``EventLoop/setIterationObserver(_:)``), and whether one is installed.
    var iterationObserver: (@Sendable (IterationReport) -> Void)?
    var isObserved = false
    /// What the iteration in progress measured for the observer (kept only when observed).
    var measurement = IterationMeasurement()
    /// A budgeted job's chunk ran past its budget in this iteration.
    var budgetOverran = false
    /// Whether to spin for another thread's job before waiting in the poll (owned loops, real time).
    var wakeSpin = WakeSpin()
    /// The main loop's watch on Dispatch's main-queue handle (rule R12), once it has been driven.
    var mainQueueWatch: Watch?
    /// Polls that did not wait and were skipped, the base holding only the loop's own events.
    var skippedPolls = 0
    /// The loop announced a wait since its last poll that did not wait: a wake-up may still be written.
    var wakeUpMayBePending = false

    /// What must end when the loop shuts down, by owner, with the order of registration.
    /// Leading observers' sequence numbers start at `Int64.min`, the others' at 0: leading ones run first.
    var shutdownObservers: [ObjectIdentifier: (sequence: Int64, body: () -> Void)] = [:]
    var nextShutdownObserverSequence: Int64 = 0
    var nextLeadingShutdownObserverSequence: Int64 = .min

    mutating func addShutdownObserver(_ owner: ObjectIdentifier, leading: Bool, _ body: @escaping () -> Void) {
        let sequence: Int64
        if leading {
            nextLeadingShutdownObserverSequence += 1
            sequence = nextLeadingShutdownObserverSequence
        } else {
            nextShutdownObserverSequence += 1
            sequence = nextShutdownObserverSequence
        }
        shutdownObservers[owner] = (sequence, body)
    }

    /// The owners of the registered observers, in registration order.
    func shutdownObserverOrder() -> [ObjectIdentifier] {
        shutdownObservers.sorted { $0.value.sequence < $1.value.sequence }.map(\.key)
    }

    mutating func releaseAll() {
        while let entry = timers.popMin() { entry.timer.markCancelled() }
        let all = watches.values
        watches = [:]
        for watch in all { watch.invalidate() }
    }
}
