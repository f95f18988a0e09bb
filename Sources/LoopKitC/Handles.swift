import CLoopKit
import LoopKit
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Every pointer conversion of the C ABI: opaque handles to Swift objects and back, and the hosts' `void *`
// contexts. Nothing else in LoopKitC touches Unmanaged or raw pointers.

/// Turns C handles into the Swift objects behind them.
enum Handles {
    /// Hands a new strong reference to C as an opaque handle.
    static func retain<Object: AnyObject>(_ object: Object) -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(object).toOpaque())
    }

    /// Hands an object that lives as long as the process (the main loop) to C, without a reference.
    static func unretained<Object: AnyObject>(_ object: Object) -> OpaquePointer {
        OpaquePointer(Unmanaged.passUnretained(object).toOpaque())
    }

    /// The object behind a handle, without taking ownership; nil for NULL.
    static func borrow<Object: AnyObject>(_ handle: OpaquePointer?, as _: Object.Type) -> Object? {
        guard let handle else { return nil }
        return Unmanaged<Object>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
    }

    /// Gives up the reference a handle holds; the handle is invalid afterwards.
    static func release<Object: AnyObject>(_ handle: OpaquePointer, as _: Object.Type) {
        Unmanaged<Object>.fromOpaque(UnsafeRawPointer(handle)).release()
    }

    /// Stores a handle through an out-parameter.
    static func store(_ handle: OpaquePointer, in out: UnsafeMutablePointer<OpaquePointer?>?) {
        out?.pointee = handle
    }
}

/// A host's `void *ctx`, carried across threads as an address.
///
/// LoopKit never dereferences it; the host decides what it points to and on which thread that is safe,
/// exactly as with libuv's or libevent's callback arguments. Storing the address as an integer keeps
/// the Swift closures that carry it `Sendable` without pretending the pointee is.
struct Context: Sendable {
    private let address: UInt

    init(_ pointer: UnsafeMutableRawPointer?) { address = UInt(bitPattern: pointer) }

    var pointer: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: address) }

    /// The address as a typed pointer to a host's struct (an `lk_fs_info` to fill), nil for NULL.
    func typed<Pointee>(_: Pointee.Type) -> UnsafeMutablePointer<Pointee>? {
        pointer?.assumingMemoryBound(to: Pointee.self)
    }
}

/// A static C string for `lk_strerror` and `lk_version`.
func staticCString(_ string: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(string.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// A C string made once and never freed, for values C reads as static storage (`lk_version`).
struct PersistentCString: Sendable {
    private let address: UInt

    init(_ string: String) { address = UInt(bitPattern: strdup(string)) }

    var pointer: UnsafePointer<CChar> { UnsafePointer(bitPattern: address)! }
}

/// The `errno` behind the calling thread's last `LK_ESYS`, in a pthread key (the value is stored as the
/// key's pointer bit pattern, so setting it never allocates).
enum LastErrno {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    static func set(_ code: Int32) {
        _ = pthread_setspecific(key, UnsafeRawPointer(bitPattern: Int(code)))
    }

    static func get() -> Int32 {
        Int32(truncatingIfNeeded: Int(bitPattern: pthread_getspecific(key)))
    }
}

/// The handle `lk_work_queue` gives C: retained when it is handed out, released after the work's `after`
/// callback returned. The completion runs on the loop in a later drain (R13), after `lk_work_queue` has
/// stored the handle, so the two never race; the atomic states that across threads.
final class WorkHandleSlot: Sendable {
    private let handle = Atomic<UInt>(0)

    func hold(_ work: OffloadedWork) -> OpaquePointer {
        let pointer = Handles.retain(work)
        handle.store(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer))), ordering: .releasing)
        return pointer
    }

    func release() {
        let address = handle.exchange(0, ordering: .acquiringAndReleasing)
        guard address != 0, let raw = UnsafeRawPointer(bitPattern: address) else { return }
        Handles.release(OpaquePointer(raw), as: OffloadedWork.self)
    }
}
