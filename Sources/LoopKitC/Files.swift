import CLoopKit
import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// lk_fs_*: file-system calls on the shared work pool, completions on the loop (EventLoop.offload).
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

/// Runs `call` on the shared pool and `cb` with its outcome on the loop's thread (R13); `delivered` runs on
/// the loop's thread before a successful cb (it copies a result into the host's memory).
private func offloadFileCall(_ loopHandle: OpaquePointer?, _ cb: lk_fs_fn?, _ ctx: UnsafeMutableRawPointer?,
                             delivered: (@Sendable (Int64) -> Void)? = nil,
                             _ call: @escaping @Sendable () -> FileOutcome) -> Int32 {
    guard let loop = Handles.borrow(loopHandle, as: EventLoop.self) else { return Status.invalid }
    let context = Context(ctx)
    do {
        try loop.offload({ call() }) { result in
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
        return Status.ok
    } catch {
        return Status.of(error)
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

@c @implementation
public func lk_fs_open(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ flags: Int32, _ mode: Int32,
                       _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx) { retrying { Int(open(copy, flags | O_CLOEXEC, mode_t(mode))) } }
}

@c @implementation
public func lk_fs_close(_ loop: OpaquePointer!, _ fd: Int32, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard fd >= 0 else { return Status.invalid }
    // Never retried: Linux frees the descriptor even when close fails.
    return offloadFileCall(loop, cb, ctx) { close(fd) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_read(_ loop: OpaquePointer!, _ fd: Int32, _ buffer: UnsafeMutableRawPointer!, _ count: Int,
                       _ offset: Int64, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard fd >= 0, let buffer, count >= 0 else { return Status.invalid }
    let target = Context(buffer)
    guard let bytes = FileBytes(count: count) else { return Status.noMemory }
    return offloadFileCall(loop, cb, ctx, delivered: { read in
        target.pointer!.copyMemory(from: bytes.pointer, byteCount: Int(read))
    }) {
        retrying { offset >= 0 ? pread(fd, bytes.pointer, count, off_t(offset)) : read(fd, bytes.pointer, count) }
    }
}

@c @implementation
public func lk_fs_write(_ loop: OpaquePointer!, _ fd: Int32, _ buffer: UnsafeRawPointer!, _ count: Int,
                        _ offset: Int64, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard fd >= 0, let buffer, count >= 0 else { return Status.invalid }
    guard let source = FileBytes(count: count) else { return Status.noMemory }
    source.pointer.copyMemory(from: buffer, byteCount: count)
    return offloadFileCall(loop, cb, ctx) {
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
    guard let path, let out else { return Status.invalid }
    let copy = String(cString: path)
    let target = Context(UnsafeMutableRawPointer(out))
    guard let info = FileBytes(count: MemoryLayout<lk_fs_info>.size) else { return Status.noMemory }
    return offloadFileCall(loop, cb, ctx, delivered: { _ in
        target.typed(lk_fs_info.self)?.pointee = info.pointer.load(as: lk_fs_info.self)
    }) {
        var status = stat()
        guard stat(copy, &status) == 0 else { return .failed(errno) }
        info.pointer.storeBytes(of: lk_fs_info(
            size: UInt64(status.st_size), mode: UInt32(status.st_mode), mtime_sec: Int64(status.st_mtim.tv_sec),
            mtime_nsec: Int32(status.st_mtim.tv_nsec), inode: UInt64(status.st_ino)), as: lk_fs_info.self)
        return .done(0)
    }
}

@c @implementation
public func lk_fs_unlink(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ cb: lk_fs_fn!,
                         _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx) { unlink(copy) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_rename(_ loop: OpaquePointer!, _ from: UnsafePointer<CChar>!, _ to: UnsafePointer<CChar>!,
                         _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let from, let to else { return Status.invalid }
    let source = String(cString: from), destination = String(cString: to)
    return offloadFileCall(loop, cb, ctx) { rename(source, destination) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_mkdir(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ mode: Int32, _ cb: lk_fs_fn!,
                        _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx) { mkdir(copy, mode_t(mode)) == 0 ? .done(0) : .failed(errno) }
}
