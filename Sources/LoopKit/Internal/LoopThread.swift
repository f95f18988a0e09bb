import CThread
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Thread identity, the thread-local "current loop", and spawning a thread: the pthread calls LoopKit
// makes, kept in one place.

/// The identity of a thread, comparable from any thread.
///
/// The calling thread is always read through `lk_thread_self()` (the `CThread` target), never through
/// `pthread_self()` directly: glibc declares `pthread_self` `const`, and a `const` call inlined into async
/// code may be computed before a suspension point and reused after it, on another thread. Thread checks
/// are inlined into async code wherever a client calls ``EventLoop/isCurrent`` or ``LoopBound/value`` from
/// a task or an actor, so the call must stay opaque to the optimiser: `lk_thread_self` is a plain function
/// in an object file of its own.
@usableFromInline
struct ThreadID: Sendable, Equatable {
    @usableFromInline let raw: pthread_t

    /// The calling thread.
    static var current: ThreadID { ThreadID(raw: lk_thread_self()) }

    /// The process's main thread, recorded at start-up; nil when LoopKit was loaded later by another thread.
    static var main: ThreadID? {
        var thread = pthread_t()
        return lk_main_thread(&thread) == 1 ? ThreadID(raw: thread) : nil
    }

    @usableFromInline
    static func == (lhs: ThreadID, rhs: ThreadID) -> Bool { pthread_equal(lhs.raw, rhs.raw) != 0 }

    /// Whether the calling thread is this one: read anew at every call, even across an `await`.
    @inlinable @inline(__always) var isCurrent: Bool { lk_thread_self() == raw }  // pthread_t is an integer on Linux
}

/// A thread-local slot holding one object per thread: LoopKit's one thread-local mechanism (the current
/// loop, the current ``TaskProgress`` frames).
///
/// The corresponding C calls are `pthread_key_create`, `pthread_getspecific` and `pthread_setspecific`.
struct ThreadLocal<Object: AnyObject>: @unchecked Sendable {  // a pthread key: an integer, valid on every thread
    private let key: pthread_key_t

    /// Creates the slot. With `retaining`, ``set(retained:)`` stores a +1 reference that the slot
    /// releases when its thread exits; without it, the slot stores unretained references.
    init(retaining: Bool) {
        var key = pthread_key_t()
        let status = retaining
            ? pthread_key_create(&key) { pointer in
                guard let pointer else { return }
                Unmanaged<AnyObject>.fromOpaque(pointer).release()
            }
            : pthread_key_create(&key, nil)
        precondition(status == 0, "LoopKit: pthread_key_create failed: \(status)")
        self.key = key
    }

    /// The calling thread's object, or nil.
    @inline(__always)
    var value: Object? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<Object>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Stores `object` for the calling thread without retaining it (a slot made with `retaining: false`).
    @inline(__always)
    func set(unretained object: Object?) {
        pthread_setspecific(key, object.map { Unmanaged.passUnretained($0).toOpaque() })
    }

    /// Stores `object` for the calling thread, retained until the thread exits (a slot made with
    /// `retaining: true`; set it once per thread).
    func set(retained object: Object) {
        pthread_setspecific(key, Unmanaged.passRetained(object).toOpaque())
    }
}

/// The loop whose iteration is running on the calling thread, for ``EventLoop/current``.
enum CurrentLoop {
    private static let slot = ThreadLocal<EventLoop>(retaining: false)

    /// The loop running an iteration on this thread, or nil.
    static var loop: EventLoop? { slot.value }

    /// Makes `loop` current for the duration of `body`, restoring the previous one after.
    @inline(__always)
    static func with<R, E: Error>(_ loop: EventLoop, _ body: () throws(E) -> R) throws(E) -> R {
        let previous = slot.value
        slot.set(unretained: loop)
        defer { slot.set(unretained: previous) }
        return try body()
    }
}

/// The machine the process runs on.
enum Machine {
    /// The number of CPUs online (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
    static var processorsOnline: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}

/// The calling thread.
enum ThisThread {
    /// Gives the thread's core to another runnable thread, if there is one (`sched_yield`).
    static func yieldCore() { sched_yield() }
}

/// A thread running one closure, joinable.
final class SpawnedThread: Sendable {
    private let handle: Lock<pthread_t?>

    /// Starts a thread running `body`. Fails only when the system is out of threads.
    init(name: String, _ body: @escaping @Sendable () -> Void) throws(EventLoopError) {
        final class Box: Sendable {
            let name: String
            let body: @Sendable () -> Void
            init(_ name: String, _ body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let context = Unmanaged.passRetained(Box(name, body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            SpawnedThread.nameCurrentThread(box.name)
            box.body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            throw .system("pthread_create", status)
        }
        handle = Lock(thread)
    }

    /// Names the calling thread for `top -H`, `ps -L` and debuggers: the first 15 bytes of `name` (the
    /// kernel's limit), cut at a character boundary.
    ///
    /// Glibc's `pthread_setname_np` is hidden from Swift (it needs `_GNU_SOURCE`) and `prctl` is variadic,
    /// so this writes `/proc/thread-self/comm`, which is what `pthread_setname_np` itself does for a thread
    /// other than the caller.
    static func nameCurrentThread(_ name: String) {
        var bytes = 0
        let prefix = name.prefix { character in
            bytes += character.utf8.count
            return bytes <= 15
        }
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var text = String(prefix)
        _ = text.withUTF8 { write(fd, $0.baseAddress, $0.count) }
    }

    /// Waits for the thread to end. Safe from any thread but this one; a second call returns at once.
    func join() {
        guard let thread = take() else { return }
        pthread_join(thread, nil)
    }

    /// Lets the thread end on its own, without anyone joining it. A second call returns at once.
    func detach() {
        guard let thread = take() else { return }
        pthread_detach(thread)
    }

    private func take() -> pthread_t? {
        handle.withLock { handle in
            defer { handle = nil }
            return handle
        }
    }
}

