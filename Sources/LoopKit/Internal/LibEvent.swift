import CEvent

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one Swift layer over libevent. Every libevent call LoopKit makes is in this file: it turns
// libevent's `-1/0/1` returns into Swift errors and its `short` flags into Swift types. Nothing else in
// the package imports CEvent.

/// Process-wide libevent set-up.
enum LibEvent {
    /// Enables libevent's pthread locking and cross-thread notification, once per process.
    ///
    /// Must run before any `event_base` this process will share between threads is created.
    /// The corresponding libevent call is `evthread_use_pthreads`.
    static let threadingEnabled: Bool = evthread_use_pthreads() == 0

    /// The libevent version string, as `event_get_version` reports it.
    static var version: String { String(cString: event_get_version()) }
}

/// What a libevent callback is told about: the `EV_*` bits of its `short what` argument.
struct LibEventFlags: OptionSet {
    let rawValue: Int16
    static let timeout = LibEventFlags(rawValue: Int16(EV_TIMEOUT))
    static let read = LibEventFlags(rawValue: Int16(EV_READ))
    static let write = LibEventFlags(rawValue: Int16(EV_WRITE))
    static let signal = LibEventFlags(rawValue: Int16(EV_SIGNAL))
    static let persist = LibEventFlags(rawValue: Int16(EV_PERSIST))
    static let edgeTriggered = LibEventFlags(rawValue: Int16(EV_ET))
}

/// The C signature libevent calls back with.
typealias LibEventCallback = @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void

/// An `event_base`, owned by LoopKit or borrowed from a host that drives it.
///
/// Only the loop's thread calls libevent on a base (other threads write the loop's eventfd): LoopKit's
/// own base is made without libevent's lock; a host's keeps whatever the host chose.
final class LibEventBase: @unchecked Sendable {  // libevent's base: touched on the loop's thread only (made before it is shared)
    /// The raw `struct event_base *`.
    let raw: OpaquePointer
    /// Whether LoopKit created the base and frees it.
    let isOwned: Bool

    /// Creates a base of LoopKit's own, without libevent's lock (`EVENT_BASE_FLAG_NOLOCK`): only the loop's
    /// thread ever calls libevent on it (other threads wake it through its eventfd, ``LoopEvents/wake()``,
    /// and reach it only through LoopKit's queue), so the lock was three uncontended lock and unlock pairs
    /// an iteration guarding nothing. The corresponding libevent calls are `event_config_new`,
    /// `event_config_set_flag` and `event_base_new_with_config`.
    init() throws(EventLoopError) {
        guard LibEvent.threadingEnabled else { throw .libevent("evthread_use_pthreads", errno: errno) }
        guard let config = event_config_new() else { throw .libevent("event_config_new", errno: errno) }
        defer { event_config_free(config) }
        guard event_config_set_flag(config, Int32(EVENT_BASE_FLAG_NOLOCK.rawValue)) == 0 else {
            throw .libevent("event_config_set_flag", errno: errno)
        }
        guard let base = event_base_new_with_config(config) else { throw .libevent("event_base_new_with_config", errno: errno) }
        raw = base
        isOwned = true
    }

    /// Borrows a host's base; LoopKit never frees it.
    init(borrowing base: OpaquePointer) {
        raw = base
        isOwned = false
    }

    deinit {
        if isOwned { event_base_free(raw) }
    }

    /// How one poll of the base may wait.
    enum PollMode {
        /// Poll without waiting, run what is ready.
        case nonBlocking
        /// Wait until at least one event is ready (or a wake-up), then run what is ready.
        case blocking
    }

    /// Polls once and runs the callbacks of ready events.
    ///
    /// The corresponding libevent call is `event_base_loop` with `EVLOOP_ONCE` (and
    /// `EVLOOP_NONBLOCK` when not blocking); `EVLOOP_NO_EXIT_ON_EMPTY` keeps a blocking poll waiting
    /// for a cross-thread wake-up even when no event is registered.
    func poll(_ mode: PollMode) throws(EventLoopError) {
        var flags = EVLOOP_ONCE | EVLOOP_NO_EXIT_ON_EMPTY
        if mode == .nonBlocking { flags |= EVLOOP_NONBLOCK }
        if event_base_loop(raw, flags) < 0 { throw .libevent("event_base_loop", errno: errno) }
    }

    /// How many events the base has added, active or virtual (libevent's own internal events aside): what a
    /// poll could find or run. The corresponding libevent call is `event_base_get_num_events`.
    var eventCount: Int32 {
        event_base_get_num_events(
            raw, UInt32(EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE | EVENT_BASE_COUNT_VIRTUAL))
    }

    /// The name of the kernel mechanism the base uses (`epoll`, `poll`, …).
    var method: String { String(cString: event_base_get_method(raw)) }
}

/// One libevent `struct event`, freed with its owner.
///
/// Added, removed and freed on its loop's thread only (LoopKit's base has no lock of libevent's).
final class LibEventHandle: @unchecked Sendable {  // one libevent event: added, removed and freed on the loop's thread only
    private let raw: OpaquePointer

    /// Creates an event; `fd` is -1 for pure timers and wake-ups, a signal number with `.signal`.
    /// The corresponding libevent call is `event_new`.
    init(
        base: LibEventBase, fd: Int32, flags: LibEventFlags,
        context: UnsafeMutableRawPointer, callback: LibEventCallback
    ) throws(EventLoopError) {
        guard let event = event_new(base.raw, fd, flags.rawValue, callback, context) else {
            throw .libevent("event_new", errno: errno)
        }
        raw = event
    }

    deinit { event_free(raw) }

    /// Adds the event with no timeout. The corresponding libevent call is `event_add`.
    func add() throws(EventLoopError) {
        if event_add(raw, nil) != 0 { throw .libevent("event_add", errno: errno) }
    }

    /// Adds the event with a timeout of `nanoseconds` (0: ready in the next poll, after I/O is polled).
    /// The corresponding libevent call is `event_add`.
    func add(timeoutNanoseconds nanoseconds: UInt64) {
        var tv = timeval(
            tv_sec: Int(nanoseconds / 1_000_000_000),
            tv_usec: Int((nanoseconds % 1_000_000_000) / 1_000))
        _ = event_add(raw, &tv)
    }

    /// Removes the event from its base. The corresponding libevent call is `event_del`.
    func remove() { _ = event_del(raw) }
}

/// The internal events every loop registers: the *tick* (in attached mode, the drain of LoopKit's queue,
/// armed from the loop thread), the *timer* (a `timerfd` set to the earliest LoopKit timer's deadline) and
/// the *wake-up* (an `eventfd` other threads write to).
///
/// **Wake-ups.** Other threads never call into libevent: they add 1 to the loop's eventfd, outside every
/// lock, and only when the queue says the loop has not been told yet (R7). (`event_active` from another
/// thread writes libevent's own notification fd while holding the base's lock, so the woken loop often
/// blocked on that lock straight out of its poll; a pipe's write wakes its reader as a "sync" wake-up,
/// which asks the scheduler to run the reader on the writer's CPU once the writer sleeps.) On a backend
/// with edge-triggered events (epoll) the eventfd is registered `EV_ET` and never read: each write is an
/// edge that ends one poll, so a wake-up costs the writer one `write` and the loop nothing beyond its
/// `epoll_wait`. (The counter would need 2^64 wake-ups to fill.) On a level-triggered backend (a host's
/// `poll` base) the callback reads it.
///
/// **Timers.** libevent measures its own timeouts on `CLOCK_MONOTONIC_COARSE` (a 1–4 ms tick) unless a
/// base is created with `EVENT_BASE_FLAG_PRECISE_TIMER`, and epoll waits in whole milliseconds: a 1 ms
/// timer woke up to 4 ms late and a repeating one lost two ticks in three. A timerfd armed with the
/// nanosecond delay to the deadline ends the poll when the deadline passes, on any base (the host's too).
///
/// The events are created in `EventLoop.init`, before the loop is visible to any other thread, and never
/// reassigned after; afterwards only the loop thread touches them, and other threads only `write` to the
/// eventfd. That write-once rule is what the unchecked conformance stands for.
final class LoopEvents: @unchecked Sendable {  // written once in init; other threads only write(2) the eventfd
    let base: LibEventBase
    private(set) var tick: LibEventHandle!
    private var timer: LibEventHandle?
    private var wakeUp: LibEventHandle?
    private var timerFD: Int32 = -1
    private var wakeUpFD: Int32 = -1
    /// Whether the wake-up event is edge-triggered (then its fd is never read).
    private(set) var wakeUpIsEdgeTriggered = false

    /// How many events an owned loop keeps added on its base: the timer and the wake-up (the tick is only
    /// ever made active).
    static let ownEventCount: Int32 = 2

    init(base: LibEventBase) { self.base = base }

    /// Creates the events with `context` (the loop) as their callbacks' argument. Call once, in init.
    func install(
        context: UnsafeMutableRawPointer,
        tick onTick: LibEventCallback, timer onTimer: LibEventCallback, wakeUp onWakeUp: LibEventCallback
    ) throws(EventLoopError) {
        tick = try LibEventHandle(base: base, fd: -1, flags: [], context: context, callback: onTick)

        timerFD = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard timerFD >= 0 else { throw .system("timerfd_create", errno) }
        let timer = try LibEventHandle(
            base: base, fd: timerFD, flags: [.read, .persist], context: context, callback: onTimer)
        try timer.add()
        self.timer = timer

        wakeUpFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeUpFD >= 0 else { throw .system("eventfd", errno) }
        wakeUpIsEdgeTriggered = event_base_get_features(base.raw) & Int32(EV_FEATURE_ET.rawValue) != 0
        var flags: LibEventFlags = [.read, .persist]
        if wakeUpIsEdgeTriggered { flags.insert(.edgeTriggered) }
        let wakeUp = try LibEventHandle(base: base, fd: wakeUpFD, flags: flags, context: context, callback: onWakeUp)
        try wakeUp.add()
        self.wakeUp = wakeUp
    }

    /// Resets a level-triggered wake-up fd; nothing to do when it is edge-triggered. The wake-up
    /// callback calls it with the fd libevent reports.
    static func acknowledgeWakeUp(_ fd: Int32, edgeTriggered: Bool) {
        guard !edgeTriggered else { return }
        var count: UInt64 = 0
        _ = read(fd, &count, 8)
    }

    /// Resets the timerfd after it fired, when it is not set again (setting it resets it too).
    func acknowledgeTimer() {
        var expirations: UInt64 = 0
        _ = read(timerFD, &expirations, 8)
    }

    /// Wakes the loop's poll. Safe from any thread; takes no lock.
    func wake() {
        var one: UInt64 = 1
        _ = write(wakeUpFD, &one, 8)  // EAGAIN only when the counter is full, and then a wake-up is pending
    }

    /// Makes the timer event fire `nanoseconds` from now (at least 1 ns: zero would disarm it).
    /// The corresponding Linux call is `timerfd_settime`.
    func armTimer(inNanoseconds nanoseconds: UInt64) {
        let delay = max(nanoseconds, 1)
        var spec = itimerspec()
        spec.it_value.tv_sec = Int(delay / 1_000_000_000)
        spec.it_value.tv_nsec = Int(delay % 1_000_000_000)
        _ = timerfd_settime(timerFD, 0, &spec, nil)
    }

    /// The time left before the timer event fires, to the nanosecond, or nil when it is not armed.
    /// The corresponding Linux call is `timerfd_gettime`.
    var timerRemainingNanoseconds: UInt64? {
        var spec = itimerspec()
        guard timerfd_gettime(timerFD, &spec) == 0, spec.it_value.tv_sec != 0 || spec.it_value.tv_nsec != 0 else { return nil }
        return UInt64(spec.it_value.tv_sec) * 1_000_000_000 + UInt64(spec.it_value.tv_nsec)
    }

    /// Stops the timer event from firing. The corresponding Linux call is `timerfd_settime`.
    func disarmTimer() {
        var spec = itimerspec()
        _ = timerfd_settime(timerFD, 0, &spec, nil)
    }

    /// Stops listening for wake-ups and timers (the loop has shut down). Loop thread only.
    func stopListening() {
        wakeUp?.remove()
        timer?.remove()
        tick.remove()
    }

    /// Runs what libevent deferred to its base's next pass, once the loop has shut down: a freed
    /// bufferevent is finalised there (closing its socket), and an owned base has no next pass after
    /// the shutdown. LoopKit's own events are gone by then, so only libevent's deferred work and events a
    /// host registered on the base itself can run. Loop thread only; not for an attached loop (its host
    /// keeps polling its base).
    ///
    /// The corresponding libevent call is `event_base_loop` with `EVLOOP_NONBLOCK`.
    func finishDeferredWork() throws(EventLoopError) {
        try base.poll(.nonBlocking)
    }

    /// Frees the events (before the base goes) and closes their fds. Call once, when the loop is torn down.
    func uninstall() {
        tick = nil
        timer = nil
        wakeUp = nil
        if timerFD >= 0 { close(timerFD) }
        if wakeUpFD >= 0 { close(wakeUpFD) }
        timerFD = -1
        wakeUpFD = -1
    }
}
