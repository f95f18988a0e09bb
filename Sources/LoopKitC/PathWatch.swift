import CLoopKit
import LoopKit
import LoopKitNet

// Path watching from C: lk_fs_watch_* over LoopKitNet's PathWatcher.

/// The `lk_fs_watch` handle: a watcher, and whether its callback is running (no free from inside it).
/// Loop-confined: every function checks the thread before touching it.
final class CPathWatch {
    let watcher: PathWatcher
    var inCallback = false

    init(watcher: PathWatcher) { self.watcher = watcher }

    var loop: EventLoop { watcher.loop }
}

extension Status {
    /// The status code for a path watcher's error (the `errno` kept for `lk_last_errno` where one applies).
    static func of(_ error: PathWatchError) -> Int32 {
        switch error {
        case .closed, .loopShutDown: closed
        case .notWatched: invalid
        case .notFound, .permissionDenied, .watchLimitReached, .instanceLimitReached, .system:
            failedSystemCall(errno: error.code)
        }
    }

    /// Runs a path watcher call and maps its outcome to `LK_OK` or an `LK_E*` code.
    static func runPathWatch(_ body: () throws(PathWatchError) -> Void) -> Int32 {
        do {
            try body()
            return ok
        } catch {
            return of(error)
        }
    }
}

/// The watch behind a handle, when called on its loop's thread; else the status to return.
private func pathWatch(_ handle: OpaquePointer?) -> Result<CPathWatch, PathWatchRefusal> {
    guard let watch = Handles.borrow(handle, as: CPathWatch.self) else { return .failure(PathWatchRefusal(status: Status.invalid)) }
    guard watch.loop.isCurrent else { return .failure(PathWatchRefusal(status: Status.wrongThread)) }
    return .success(watch)
}

/// Why a call was refused before it reached the watcher.
private struct PathWatchRefusal: Error {
    let status: Int32
}

/// A path and flags from C, or nil when either is unusable (NULL, empty, unknown flags).
private func watchArguments(_ path: UnsafePointer<CChar>?, _ flags: UInt32) -> (path: String, recursive: Bool)? {
    guard let path, path.pointee != 0, flags & ~UInt32(LK_FS_WATCH_RECURSIVE) == 0 else { return nil }
    return (String(cString: path), flags & UInt32(LK_FS_WATCH_RECURSIVE) != 0)
}

@c @implementation
public func lk_fs_watch_start(
    _ loopHandle: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ flags: UInt32,
    _ fn: (@convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Void)!,
    _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!
) -> Int32 {
    guard let loop = Handles.borrow(loopHandle, as: EventLoop.self), let fn, let out else { return Status.invalid }
    guard loop.isCurrent else { return Status.wrongThread }
    guard let arguments = watchArguments(path, flags) else { return Status.invalid }
    let watcher: PathWatcher
    do {
        watcher = try PathWatcher(watching: arguments.path, recursive: arguments.recursive, on: loop)
    } catch {
        return Status.of(error)
    }
    let watch = CPathWatch(watcher: watcher)
    let cHandle = Handles.retain(watch)
    let context = Context(ctx)
    watcher.onEvents { [unowned watch] events in
        watch.inCallback = true
        defer { watch.inCallback = false }
        for event in events {
            if watch.watcher.isClosed { break }  // stopped by the callback
            let changes = event.changes.rawValue | (event.isDirectory ? Int32(LK_FS_ISDIR) : 0)
            event.path.withCString { fn(context.pointer, cHandle, $0, changes) }
        }
    }
    Handles.store(cHandle, in: out)
    return Status.ok
}

@c @implementation
public func lk_fs_watch_add(_ handle: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ flags: UInt32) -> Int32 {
    switch pathWatch(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let watch):
        guard let arguments = watchArguments(path, flags) else { return Status.invalid }
        return Status.runPathWatch { () throws(PathWatchError) in
            try watch.watcher.watch(arguments.path, recursive: arguments.recursive)
        }
    }
}

@c @implementation
public func lk_fs_watch_remove(_ handle: OpaquePointer!, _ path: UnsafePointer<CChar>!) -> Int32 {
    switch pathWatch(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let watch):
        guard let path else { return Status.invalid }
        return Status.runPathWatch { () throws(PathWatchError) in try watch.watcher.unwatch(String(cString: path)) }
    }
}

@c @implementation
public func lk_fs_watch_stop(_ handle: OpaquePointer!) -> Int32 {
    switch pathWatch(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let watch):
        guard !watch.watcher.isClosed else { return Status.closed }
        watch.watcher.close()
        return Status.ok
    }
}

@c @implementation
public func lk_fs_watch_free(_ handle: OpaquePointer!) -> Int32 {
    switch pathWatch(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let watch):
        guard !watch.inCallback else { return Status.busy }
        watch.watcher.close()
        Handles.release(handle, as: CPathWatch.self)
        return Status.ok
    }
}
