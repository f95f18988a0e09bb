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
        guard LibEvent.threadingEnabled else { throw .libevent("evthread_use_pthreads", errno: errno) }
        guard let base = event_base_new() else { throw .libevent("event_base_new", errno: errno) }
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
/// armed from the loop thread), the *timer* (set to the earliest LoopKit timer's deadline) and the *wake-up*
/// (a pipe other threads write to).
///
/// Other threads never call into libevent: they write one byte to the wake-up pipe, outside every lock.
/// (`event_active` from another thread writes libevent's own notification fd while holding the base's
/// lock, so the woken loop often blocked on that lock straight out of its poll.)
///
/// The events are created in `EventLoop.init`, before the loop is visible to any other thread, and never
/// reassigned after; afterwards only the loop thread touches them, and other threads only `write` to the
/// pipe. That write-once rule is what the unchecked conformance stands for.
final class LoopEvents: @unchecked Sendable {
    let base: LibEventBase
    private(set) var tick: LibEventHandle!
    private(set) var timer: LibEventHandle!
    private var wakeUp: LibEventHandle?
    private var wakeUpRead: Int32 = -1
    private var wakeUpWrite: Int32 = -1

    init(base: LibEventBase) { self.base = base }

    /// Creates the events with `context` (the loop) as their callback argument. Call once, in init.
    func install(context: UnsafeMutableRawPointer, callback: LibEventCallback) throws(EventLoopError) {
        tick = try LibEventHandle(base: base, fd: -1, flags: [], context: context, callback: callback)
        timer = try LibEventHandle(base: base, fd: -1, flags: [], context: context, callback: callback)
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw .system("pipe", errno) }
        wakeUpRead = fds[0]
        wakeUpWrite = fds[1]
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        let event = try LibEventHandle(
            base: base, fd: wakeUpRead, flags: [.read, .persist], context: context, callback: callback)
        try event.add()
        wakeUp = event
    }

    /// Empties the wake-up pipe; the shared callback calls it when the ready fd is not -1.
    ///
    /// Wake-ups are coalesced to at most one per iteration, so one 64-byte read almost always empties the
    /// pipe; a full read means there may be more.
    static func drainWakeUps(_ fd: Int32) {
        var sink = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let size = MemoryLayout.size(ofValue: sink)
        while withUnsafeMutableBytes(of: &sink, { read(fd, $0.baseAddress, size) }) == size {}
    }

    /// Wakes the loop's poll. Safe from any thread; takes no lock.
    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeUpWrite, &byte, 1)  // a full pipe already holds a wake-up: nothing is lost
    }

    /// Stops listening for wake-ups (the loop has shut down). Loop thread only.
    func stopWakeUps() { wakeUp?.remove() }

    /// Frees the events (before the base goes) and closes the pipe. Call once, when the loop is torn down.
    func uninstall() {
        tick = nil
        timer = nil
        wakeUp = nil
        if wakeUpRead >= 0 { close(wakeUpRead) }
        if wakeUpWrite >= 0 { close(wakeUpWrite) }
        wakeUpRead = -1
        wakeUpWrite = -1
    }
}
