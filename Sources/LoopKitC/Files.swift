import CLoopKit
import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// lk_fs_*: file-system calls on the shared work pool, completions on the loop (EventLoop.offload). Each call
// has a twin, lk_fs_<call>_req, that also hands back the request (the OffloadedWork, as lk_work_queue's handle)
// for lk_fs_cancel; the plain call is the twin with no out-parameter.
//
// The pool thread never touches the host's memory: a call still running when the loop shuts down gets its cb
// (LK_ECANCELED) at once and runs on to its end, and a host may release its buffer in that cb. So lk_fs_write
// copies the bytes before it returns, and lk_fs_read and lk_fs_stat fill LoopKit's own memory, copied into the
// host's on the loop's thread just before a successful cb.

/// A system call's outcome: its result, or the errno it failed with.
private enum FileOutcome: Sendable {
    case done(Int64)
    case failed(Int32)
}

/// Memory of LoopKit's own that a pool thread fills or reads, freed when the last closure holding it ends.
private final class FileBytes: @unchecked Sendable {  // written by the pool thread, read on the loop after it ended
    let pointer: UnsafeMutableRawPointer
    let count: Int

    /// nil when the memory cannot be had (the call returns LK_ENOMEM).
    init?(count: Int) {
        guard let pointer = malloc(max(count, 1)) else { return nil }
        self.count = count
        self.pointer = pointer
    }

    deinit { free(pointer) }
}

/// Runs `call` on the shared pool and `completion` with its outcome on the loop's thread (R13), exactly once.
/// With `out`, the request's handle is stored there before this returns and released after `completion`
/// returned (the completion never runs before this returns, so the two never race).
func offloadFileRequest<Value: Sendable>(
    _ loopHandle: OpaquePointer?, out: UnsafeMutablePointer<OpaquePointer?>?,
    _ call: @escaping @Sendable () -> Value, completion: @escaping @Sendable (Result<Value, any Error>) -> Void
) -> Int32 {
    guard let loop = Handles.borrow(loopHandle, as: EventLoop.self) else { return Status.invalid }
    let slot = WorkHandleSlot()
    do {
        let request = try loop.offload({ call() }) { result in
            completion(result)  // a failure: cancelled (lk_fs_cancel), or the loop shut down first
            slot.release()
        }
        if let out { Handles.store(slot.hold(request), in: out) }
        return Status.ok
    } catch {
        return Status.of(error)
    }
}

/// Runs `call` on the shared pool and `cb` with its outcome on the loop's thread (R13); `delivered` runs on
/// the loop's thread before a successful cb (it copies a result into the host's memory).
private func offloadFileCall(_ loopHandle: OpaquePointer?, _ cb: lk_fs_fn?, _ ctx: UnsafeMutableRawPointer?,
                             _ out: UnsafeMutablePointer<OpaquePointer?>?, delivered: (@Sendable (Int64) -> Void)? = nil,
                             _ call: @escaping @Sendable () -> FileOutcome) -> Int32 {
    let context = Context(ctx)
    return offloadFileRequest(loopHandle, out: out, call) { result in
        switch result {
        case .success(.done(let value)):
            delivered?(value)
            cb?(context.pointer, Status.ok, value)
        case .success(.failed(let code)):
            cb?(context.pointer, Status.failedSystemCall(errno: code), Int64(code))
        case .failure:
            cb?(context.pointer, Status.cancelled, 0)
        }
    }
}

/// Runs `body` (a system call returning -1 with errno on failure) again while it fails with EINTR.
private func retrying(_ body: () -> Int) -> FileOutcome {
    while true {
        let result = body()
        if result >= 0 { return .done(Int64(result)) }
        if errno != EINTR { return .failed(errno) }
    }
}

// Each plain call is its _req twin without a request handle.

@c @implementation
public func lk_fs_open(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ flags: Int32, _ mode: Int32,
                       _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    lk_fs_open_req(loop, path, flags, mode, cb, ctx, nil)
}

@c @implementation
public func lk_fs_open_req(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ flags: Int32, _ mode: Int32,
                           _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!,
                           _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx, out) { retrying { Int(open(copy, flags | O_CLOEXEC, mode_t(mode))) } }
}

@c @implementation
public func lk_fs_close(_ loop: OpaquePointer!, _ fd: Int32, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    lk_fs_close_req(loop, fd, cb, ctx, nil)
}

@c @implementation
public func lk_fs_close_req(_ loop: OpaquePointer!, _ fd: Int32, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!,
                            _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard fd >= 0 else { return Status.invalid }
    // Never retried: Linux frees the descriptor even when close fails.
    return offloadFileCall(loop, cb, ctx, out) { close(fd) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_read(_ loop: OpaquePointer!, _ fd: Int32, _ buffer: UnsafeMutableRawPointer!, _ count: Int,
                       _ offset: Int64, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    lk_fs_read_req(loop, fd, buffer, count, offset, cb, ctx, nil)
}

@c @implementation
public func lk_fs_read_req(_ loop: OpaquePointer!, _ fd: Int32, _ buffer: UnsafeMutableRawPointer!, _ count: Int,
                           _ offset: Int64, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!,
                           _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    // count is C's size_t as an Int: one above SSIZE_MAX is negative here, and refused.
    guard fd >= 0, let buffer, count >= 0 else { return Status.invalid }
    let target = Context(buffer)
    guard let bytes = FileBytes(count: count) else { return Status.noMemory }
    return offloadFileCall(loop, cb, ctx, out, delivered: { read in
        target.pointer!.copyMemory(from: bytes.pointer, byteCount: Int(read))
    }) {
        retrying { offset >= 0 ? pread(fd, bytes.pointer, count, off_t(offset)) : read(fd, bytes.pointer, count) }
    }
}

@c @implementation
public func lk_fs_write(_ loop: OpaquePointer!, _ fd: Int32, _ buffer: UnsafeRawPointer!, _ count: Int,
                        _ offset: Int64, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    lk_fs_write_req(loop, fd, buffer, count, offset, cb, ctx, nil)
}

@c @implementation
public func lk_fs_write_req(_ loop: OpaquePointer!, _ fd: Int32, _ buffer: UnsafeRawPointer!, _ count: Int,
                            _ offset: Int64, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!,
                            _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    // count is C's size_t as an Int: one above SSIZE_MAX is negative here, and refused.
    guard fd >= 0, let buffer, count >= 0 else { return Status.invalid }
    guard let source = FileBytes(count: count) else { return Status.noMemory }
    source.pointer.copyMemory(from: buffer, byteCount: count)
    return offloadFileCall(loop, cb, ctx, out) {
        var done = 0
        while done < count {
            let start = source.pointer + done
            let step = retrying {
                offset >= 0 ? pwrite(fd, start, count - done, off_t(offset) + off_t(done)) : write(fd, start, count - done)
            }
            switch step {
            case .done(let wrote): done += Int(wrote)
            case .failed: return step
            }
        }
        return .done(Int64(count))
    }
}

@c @implementation
public func lk_fs_stat(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ out: UnsafeMutablePointer<lk_fs_info>!,
                       _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    lk_fs_stat_req(loop, path, out, cb, ctx, nil)
}

@c @implementation
public func lk_fs_stat_req(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ info: UnsafeMutablePointer<lk_fs_info>!,
                           _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!,
                           _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let path, let info else { return Status.invalid }
    let copy = String(cString: path)
    let target = Context(UnsafeMutableRawPointer(info))
    guard let filled = FileBytes(count: MemoryLayout<lk_fs_info>.size) else { return Status.noMemory }
    return offloadFileCall(loop, cb, ctx, out, delivered: { _ in
        target.typed(lk_fs_info.self)?.pointee = filled.pointer.load(as: lk_fs_info.self)
    }) {
        var status = stat()
        guard stat(copy, &status) == 0 else { return .failed(errno) }
        filled.pointer.storeBytes(of: lk_fs_info(
            size: UInt64(status.st_size), mode: UInt32(status.st_mode), mtime_sec: Int64(status.st_mtim.tv_sec),
            mtime_nsec: Int32(status.st_mtim.tv_nsec), inode: UInt64(status.st_ino)), as: lk_fs_info.self)
        return .done(0)
    }
}

@c @implementation
public func lk_fs_unlink(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ cb: lk_fs_fn!,
                         _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    lk_fs_unlink_req(loop, path, cb, ctx, nil)
}

@c @implementation
public func lk_fs_unlink_req(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ cb: lk_fs_fn!,
                             _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx, out) { unlink(copy) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_rename(_ loop: OpaquePointer!, _ from: UnsafePointer<CChar>!, _ to: UnsafePointer<CChar>!,
                         _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    lk_fs_rename_req(loop, from, to, cb, ctx, nil)
}

@c @implementation
public func lk_fs_rename_req(_ loop: OpaquePointer!, _ from: UnsafePointer<CChar>!, _ to: UnsafePointer<CChar>!,
                             _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!,
                             _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let from, let to else { return Status.invalid }
    let source = String(cString: from), destination = String(cString: to)
    return offloadFileCall(loop, cb, ctx, out) { rename(source, destination) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_mkdir(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ mode: Int32, _ cb: lk_fs_fn!,
                        _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    lk_fs_mkdir_req(loop, path, mode, cb, ctx, nil)
}

@c @implementation
public func lk_fs_mkdir_req(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ mode: Int32, _ cb: lk_fs_fn!,
                            _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx, out) { mkdir(copy, mode_t(mode)) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_cancel(_ handle: OpaquePointer!) -> Int32 {
    guard let request = Handles.borrow(handle, as: OffloadedWork.self) else { return Status.invalid }
    return request.cancel() ? Status.ok : Status.busy
}
