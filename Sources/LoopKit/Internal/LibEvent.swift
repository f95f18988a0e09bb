import CEvent

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
}

/// The C signature libevent calls back with.
typealias LibEventCallback = @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void

/// An `event_base`, owned by LoopKit or borrowed from a host that drives it.
///
/// libevent locks each base itself once ``LibEvent/threadingEnabled`` has run, so the calls made
/// here from other threads (`event_active`, `event_add`) are safe; the unchecked conformance
/// records that libevent, not Swift, provides the synchronisation.
final class LibEventBase: @unchecked Sendable {
    /// The raw `struct event_base *`.
    let raw: OpaquePointer
    /// Whether LoopKit created the base and frees it.
    let isOwned: Bool

    /// Creates a base of LoopKit's own. The corresponding libevent call is `event_base_new`.
    init() throws(EventLoopError) {
        guard LibEvent.threadingEnabled else { throw .libevent("evthread_use_pthreads") }
        guard let base = event_base_new() else { throw .libevent("event_base_new") }
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
        if event_base_loop(raw, flags) < 0 { throw .libevent("event_base_loop") }
    }

    /// The name of the kernel mechanism the base uses (`epoll`, `poll`, …).
    var method: String { String(cString: event_base_get_method(raw)) }
}

/// One libevent `struct event`, freed with its owner.
///
/// libevent serialises every operation on an event under its base's lock, so an `event_active` from
/// another thread is safe; the unchecked conformance records that libevent provides the
/// synchronisation.
final class LibEventHandle: @unchecked Sendable {
    private let raw: OpaquePointer

    /// Creates an event; `fd` is -1 for pure timers and wake-ups, a signal number with `.signal`.
    /// The corresponding libevent call is `event_new`.
    init(
        base: LibEventBase, fd: Int32, flags: LibEventFlags,
        context: UnsafeMutableRawPointer, callback: LibEventCallback
    ) throws(EventLoopError) {
        guard let event = event_new(base.raw, fd, flags.rawValue, callback, context) else {
            throw .libevent("event_new")
        }
        raw = event
    }

    deinit { event_free(raw) }

    /// Adds the event with no timeout. The corresponding libevent call is `event_add`.
    func add() throws(EventLoopError) {
        if event_add(raw, nil) != 0 { throw .libevent("event_add") }
    }

    /// Adds the event with a timeout of `nanoseconds` (0: ready in the next poll, after I/O is polled).
    /// The corresponding libevent call is `event_add`.
    func add(timeoutNanoseconds nanoseconds: UInt64) {
        var tv = timeval(
            tv_sec: Int(nanoseconds / 1_000_000_000),
            tv_usec: Int((nanoseconds % 1_000_000_000) / 1_000))
        _ = event_add(raw, &tv)
    }

    /// Makes the event ready now, from any thread, waking a waiting base.
    /// The corresponding libevent call is `event_active`.
    func activate() { event_active(raw, 0, 0) }

    /// Removes the event from its base. The corresponding libevent call is `event_del`.
    func remove() { _ = event_del(raw) }
}

/// The two internal events every loop registers: the *tick* (a wake-up, and in attached mode the
/// drain of LoopKit's queue) and the *timer* (set to the earliest LoopKit timer's deadline).
///
/// Both are created in `EventLoop.init`, before the loop is visible to any other thread, and never
/// reassigned after; afterwards only libevent's own locked calls touch them. That write-once rule is
/// what the unchecked conformance stands for.
final class LoopEvents: @unchecked Sendable {
    let base: LibEventBase
    private(set) var tick: LibEventHandle!
    private(set) var timer: LibEventHandle!

    init(base: LibEventBase) { self.base = base }

    /// Creates both events with `context` (the loop) as their callback argument. Call once, in init.
    func install(context: UnsafeMutableRawPointer, callback: LibEventCallback) throws(EventLoopError) {
        tick = try LibEventHandle(base: base, fd: -1, flags: [], context: context, callback: callback)
        timer = try LibEventHandle(base: base, fd: -1, flags: [], context: context, callback: callback)
    }

    /// Frees both events (before the base goes). Call once, when the loop is torn down.
    func uninstall() {
        tick = nil
        timer = nil
    }
}
