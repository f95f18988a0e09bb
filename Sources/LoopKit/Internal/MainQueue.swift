import CDispatchMainQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Dispatch's main queue, seen as CoreFoundation's run loop sees it: a handle to watch and a drain to call.
///
/// `DispatchQueue.main` and the `@MainActor` jobs of Swift's default main executor on Linux go to this
/// queue; nothing runs them unless a run loop on the main thread drains it (or `dispatchMain()` gives the
/// main thread to Dispatch for good). ``EventLoop/main`` is such a run loop.
///
/// The corresponding libdispatch calls are `_dispatch_get_main_queue_handle_4CF` and
/// `_dispatch_main_queue_callback_4CF`, exported by libdispatch for CFRunLoop but absent from its headers.
enum MainQueue {
    /// The eventfd libdispatch writes to whenever the main queue gets work. Safe from any thread.
    static var handle: Int32 { _dispatch_get_main_queue_handle_4CF() }

    /// Clears the handle after it was seen readable (it is non-blocking).
    static func acknowledge(_ handle: Int32) {
        var count: UInt64 = 0
        _ = read(handle, &count, 8)
    }

    /// Runs the blocks on the main queue now: those queued before the call, in their order; blocks they
    /// queue run at the next call. Call on the main thread, never after `dispatchMain()`.
    static func drain() { _dispatch_main_queue_callback_4CF(nil) }
}
